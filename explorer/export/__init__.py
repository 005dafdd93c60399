"""Qt-free writing of the numbers behind every plot: CSV tables and JSON summaries."""

from explorer.export.tables import matrix_table, safe_name, write_csv, write_json

__all__ = ["matrix_table", "safe_name", "write_csv", "write_json"]
