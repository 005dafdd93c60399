"""The Examples panel on a real bus: evaluated in its runner, sorted and filtered with numpy, rows
become the probe, bad input is one line and keeps the table, state survives a new panel."""

import numpy as np
import pytest
from PySide6.QtCore import Qt

from explorer.analysis.examples import evaluate_examples, examples_of
from explorer.ui.bus import AppBus


@pytest.fixture
def app_names(qapp, isolated_settings):
    """The app's own names (as `explorer gui` sets them): the panel keeps its state only there."""
    from explorer.ui.app import APPLICATION, ORGANISATION

    before = qapp.organizationName(), qapp.applicationName()
    qapp.setOrganizationName(ORGANISATION)
    qapp.setApplicationName(APPLICATION)
    yield
    qapp.setOrganizationName(before[0])
    qapp.setApplicationName(before[1])


@pytest.fixture
def panel(qtbot, app_names, tiny_workspace):
    from explorer.ui.panels.examples import ExamplesPanel

    bus = AppBus()
    panel = ExamplesPanel(bus)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.evaluated, timeout=60_000):
        bus.set_workspace(tiny_workspace)
    yield panel
    panel.shutdown()


def _column(panel, name):
    model = panel.model
    col = model.names.index(name)
    return [model.data(model.index(r, col)) for r in range(model.rowCount())]


def test_evaluates_the_validation_set(panel, tiny_workspace):
    expected = evaluate_examples(tiny_workspace, examples_of(tiny_workspace))
    assert panel.model.rowCount() == len(expected)
    assert list(panel.model.table.columns["output"]) == list(expected.columns["output"])
    assert panel.summary.text().startswith("<b>Slice:</b> 8 examples")
    assert panel.progress.value() == panel.progress.maximum() == 8
    assert panel.tables()["length"][1]  # the length plot has its buckets


def test_the_evaluation_job_prepares_the_table_for_sorting_and_filtering(panel, qtbot, tiny_workspace):
    """The table reaches the GUI thread with its texts' sort ranks and search texts made (in the
    job runner), equal to those a table makes on its first sort or filter."""
    from explorer.analysis.examples import ExampleTable

    with qtbot.waitSignal(panel.runner.done, timeout=60_000) as done:
        panel.evaluate()
    table = done.args[1]
    assert table is panel.model.table and table.prepared
    lazy = ExampleTable(dict(table.columns), True)
    for name in ("source", "reference", "output"):
        assert np.array_equal(table.text_ranks(name), lazy.text_ranks(name))
        for lower in (True, False):
            assert table.joined_texts(name, lower).text == lazy.joined_texts(name, lower).text
    panel.view.sortByColumn(panel.model.names.index("output"), Qt.AscendingOrder)
    outputs = _column(panel, "output")
    assert outputs == sorted(outputs, key=str.lower)


def test_the_scores_stay_in_sight_in_a_narrow_panel_until_a_column_is_resized_by_hand(panel, qtbot):
    """1280 x 800 leaves the panel about 860 pixels: the texts shorten so that BLEU is in view;
    a wide panel gives them their full width; a width set by hand is kept."""
    from explorer.ui.examples_model import MIN_TEXT_WIDTH, TEXT_WIDTH

    header, names = panel.view.horizontalHeader(), panel.model.names
    bleu = names.index("bleu")
    panel.resize(900, 700)
    panel.show()
    qtbot.waitExposed(panel)
    right_edge = header.sectionViewportPosition(bleu) + header.sectionSize(bleu)
    assert right_edge <= panel.view.viewport().width()
    assert MIN_TEXT_WIDTH <= header.sectionSize(names.index("source")) < TEXT_WIDTH
    panel.resize(1800, 700)
    qtbot.waitUntil(lambda: header.sectionSize(names.index("source")) == TEXT_WIDTH)
    header.resizeSection(names.index("output"), 400)  # by hand
    panel.resize(900, 700)
    qtbot.waitUntil(lambda: panel.view.viewport().width() < 900)
    assert header.sectionSize(names.index("output")) == 400
    assert header.sectionSize(names.index("source")) == TEXT_WIDTH


def test_the_length_plot_names_each_bucket_and_its_examples(panel):
    from explorer.analysis.examples import length_buckets

    buckets = length_buckets(panel.model.table)
    ticks = panel.length_plot.plot.getAxis("bottom")._tickLevels[0]
    assert [label for _, label in ticks] == [f"{b.label} ({len(b.rows)})" for b in buckets]
    assert [x for x, _ in ticks] == [(b.low + b.high) / 2 for b in buckets]  # under each point
    x, y = panel.length_plot.plot.listDataItems()[0].getData()
    assert list(x) == [x for x, _ in ticks]
    low, high = panel.length_plot.plot.viewRange()[1]
    assert low == 0 and np.nanmax(y) <= high <= 100  # BLEU's scale from zero, never past 100


def test_before_a_table_its_place_says_why_and_while_evaluating_that_it_is(qtbot, app_names, tiny_workspace):
    from explorer.ui.panels.examples import NO_MODEL_ROWS, NOT_EVALUATED, ExamplesPanel

    bus = AppBus()
    panel = ExamplesPanel(bus)
    qtbot.addWidget(panel)
    assert panel.table_view.message == NO_MODEL_ROWS and panel.summary.isHidden()
    with qtbot.waitSignal(panel.evaluated, timeout=60_000):
        bus.set_workspace(tiny_workspace)  # starts evaluating
        assert panel.table_view.message.startswith("Evaluating 8 examples of the validation set")
        assert panel.length_view.message != NOT_EVALUATED  # it is being evaluated
    assert not panel.table_view.empty and not panel.length_view.empty
    assert not panel.summary.isHidden()
    panel.shutdown()


@pytest.mark.parametrize("height", [800, 450])
def test_the_table_gets_most_of_the_height_and_the_plot_stays_readable(qtbot, app_names, tiny_workspace,
                                                                      height):
    """A tall panel (1280 x 800's) gives the table two thirds; a short one (1920 x 1080's dock)
    still leaves the length plot its TABS_HEIGHT."""
    from explorer.ui.panels.examples import TABS_HEIGHT, ExamplesPanel

    bus = AppBus()
    panel = ExamplesPanel(bus)
    qtbot.addWidget(panel)
    panel.resize(900, height)
    panel.show()
    qtbot.waitExposed(panel)
    with qtbot.waitSignal(panel.evaluated, timeout=60_000):
        bus.set_workspace(tiny_workspace)
    table, tabs = panel.splitter.sizes()
    assert tabs >= min(TABS_HEIGHT, (table + tabs) // 2) and table >= tabs
    if height == 800:
        assert table >= 1.9 * tabs
    panel.shutdown()


def test_sorting_by_a_column_header(panel):
    panel.view.sortByColumn(panel.model.names.index("loss"), Qt.DescendingOrder)
    losses = [float(v) for v in _column(panel, "loss")]
    assert losses == sorted(losses, reverse=True)
    panel.view.sortByColumn(panel.model.names.index("source"), Qt.AscendingOrder)
    sources = _column(panel, "source")
    assert sources == sorted(sources, key=str.lower)


def test_filter_slice_and_bad_regex(panel, qtbot):
    panel.pattern_boxes["source"].setText("^[a-m]")
    assert panel.apply_filter()
    sources = _column(panel, "source")
    want = [s for s in panel.model.table.columns["source"] if s[0].lower() <= "m"]
    assert sorted(sources) == sorted(want)
    shown = panel.model.rowCount()
    panel.pattern_boxes["source"].setText("(unclosed")
    assert not panel.apply_filter()
    assert "regular expression" in panel.message and "\n" not in panel.message
    assert panel.model.rowCount() == shown  # the table keeps what it had
    panel.pattern_boxes["source"].setText("zzzz-no-such")
    assert panel.apply_filter()
    assert panel.model.rowCount() == 0 and "empty" in panel.summary.text()


def test_selecting_a_row_makes_it_the_probe(panel, qtbot):
    row = 3
    source = panel.model.table.columns["source"][panel.model.table_row(row)]
    with qtbot.waitSignal(panel.bus.probe_requested) as probe:
        panel.view.selectRow(row)
    assert probe.args[0] == source


def test_what_if_pins_the_selected_row(panel, qtbot):
    assert not panel.what_if() and "select a row" in panel.message
    shown = []
    panel.bus.show_panel.connect(shown.append)
    panel.view.selectRow(2)
    with qtbot.waitSignal(panel.bus.whatif_requested) as pinned:
        panel.whatif_button.click()
    assert pinned.args == [str(panel.model.table.columns["source"][panel.model.table_row(2)])]
    assert shown == ["whatif"]


def test_pinned_evaluation_gives_a_change_column(panel, qtbot, tiny_workspace):
    panel.pin()
    with qtbot.waitSignal(panel.evaluated, timeout=60_000):
        panel.evaluate()
    assert "change" in panel.model.names
    assert np.allclose(panel.model.change, 0)  # the same model: nothing changed


def test_state_is_kept_between_sessions(panel, qtbot, tiny_workspace):
    from explorer.ui.panels.examples import ExamplesPanel

    panel.pattern_boxes["reference"].setText("a")
    panel.apply_filter()
    assert panel.save_slice("has a")
    panel.view.sortByColumn(panel.model.names.index("bleu"), Qt.DescendingOrder)
    again = ExamplesPanel(AppBus())
    qtbot.addWidget(again)
    assert again.pattern_boxes["reference"].text() == "a"
    assert again.slices == {"has a": panel.current_filter().to_dict()}
    with qtbot.waitSignal(again.evaluated, timeout=60_000):
        again.bus.set_workspace(tiny_workspace)
    bleu = [float(v) for v in _column(again, "bleu")]
    assert bleu == sorted(bleu, reverse=True)
    again.shutdown()


def test_outside_the_app_no_state_is_read_or_kept(panel, qtbot, qapp):
    from explorer.ui.panels.examples import ExamplesPanel

    panel.pattern_boxes["source"].setText("^a")
    panel.apply_filter()
    qapp.setApplicationName("a script")  # explorer export, a user's script
    other = ExamplesPanel(AppBus())
    qtbot.addWidget(other)
    assert other.pattern_boxes["source"].text() == "" and not other.slices
    other.shutdown()


def test_export_writes_the_rows_shown(panel, tmp_path):
    import csv

    panel.pattern_boxes["source"].setText("^[a-m]")
    panel.apply_filter()
    panel.export_rows(str(tmp_path / "rows.csv"))
    rows = list(csv.DictReader(open(tmp_path / "rows.csv", encoding="utf-8")))
    assert [r["source"] for r in rows] == _column(panel, "source")


def test_sorting_and_filtering_100k_rows_is_fast(qtbot):
    import time

    from explorer.analysis.examples import ExampleTable, SliceFilter
    from explorer.ui.examples_model import ExamplesModel

    rng = np.random.default_rng(0)
    n = 100_000
    words = np.array(["a dog runs", "two men", "a woman sings", "the cat"], dtype=object)
    columns = {"source": words[rng.integers(0, 4, n)], "reference": words[rng.integers(0, 4, n)],
               "output": words[rng.integers(0, 4, n)]}
    for name in ("loss", "loss_per_token", "token_accuracy", "bleu", "chrf"):
        columns[name] = rng.random(n)
    for name in ("source_length", "reference_length", "output_length"):
        columns[name] = rng.integers(1, 40, n)
    model = ExamplesModel()
    model.set_table(ExampleTable(columns, True))
    start = time.perf_counter()
    model.sort(model.names.index("bleu"), Qt.DescendingOrder)
    model.set_filter(SliceFilter({"source": "dog"}, min_length=5))
    elapsed = time.perf_counter() - start
    shown = columns["bleu"][model.view]
    assert np.all(np.diff(shown) <= 0)
    assert elapsed < 1.0  # the benchmark (benchmarks/bench_examples.py) measures the real figure


def test_a_row_becomes_the_probe_of_the_step_panel(panel, qtbot):
    from explorer.ui.panels.step_decoding import StepDecodingPanel
    from explorer.ui.probing import Prober

    Prober(panel.bus)  # the controller's, in the app
    step = StepDecodingPanel(panel.bus)
    qtbot.addWidget(step)
    step.set_workspace(panel.workspace)
    row = panel.model.rowCount() - 1
    source = panel.model.table.columns["source"][panel.model.table_row(row)]
    panel.view.selectRow(row)
    assert step.source_box.text() == source
    assert step.decoder is not None and step.decoder.steps_taken == 0
    step.shutdown()


def test_neighbours_of_the_probe_in_the_background(panel, qtbot):
    view = panel.neighbours
    with qtbot.waitSignal(view.index_runner.done, timeout=60_000):
        view.build()
    assert len(view.index) == len(panel.workspace.data.train)
    source, target = panel.workspace.data.train[5]
    with qtbot.waitSignal(view.query_runner.done, timeout=60_000):
        panel.bus.state.set_probe_input(source, target)
    assert view.neighbours[0].index == 5 and view.neighbours[0].distance < 1e-4
    assert view.table.item(0, 0).text() == source
    assert repr(source) in view.status.text()  # whose neighbours these are
    assert not view.step_box.isEnabled()  # the encoder's state has no output step
    view.kind_box.setCurrentIndex(view.kind_box.findData("decoder"))
    assert view.step_box.isEnabled() and view.table.rowCount() == 0
    view.kind_box.setCurrentIndex(view.kind_box.findData("encoder"))
    with qtbot.waitSignal(panel.bus.probe_requested) as probe:
        view.table.cellClicked.emit(1, 0)
    assert probe.args == [view.neighbours[1].source, view.neighbours[1].target]


def test_evaluation_leaves_the_shared_model_alone(panel, qtbot):
    model = panel.workspace.model
    model.train()  # as the training thread has it
    before = {name: value.clone() for name, value in model.state_dict().items()}
    with qtbot.waitSignal(panel.evaluated, timeout=60_000):
        panel.evaluate()
    assert model.training  # never switched to eval mode under the trainer's feet
    assert all((before[name] == value).all() for name, value in model.state_dict().items())


def test_clicking_a_worst_token_shows_exactly_its_examples(panel, qtbot, tiny_workspace):
    from seqmodels.config import EOS_ID

    worst = panel.worst
    assert worst is not None and len(worst.labels) > 0
    table = panel.model.table
    item = panel.tokens_table.item(0, 0)
    rect = panel.tokens_table.visualItemRect(item)
    qtbot.mouseClick(panel.tokens_table.viewport(), Qt.LeftButton, pos=rect.center())
    token_id = int(table.tokens["id"][table.tokens["label"] == worst.labels[0]][0])
    # independent of the table's token rows: the references that hold the token, tokenized again
    holding = {i for i, reference in enumerate(table.columns["reference"])
               if token_id in tiny_workspace.tokenizer.encode(reference) + [EOS_ID]}
    assert set(panel.model.view.tolist()) == holding
    assert panel.model.rowCount() == len(holding)


def test_change_against_a_pinned_evaluation_sorts_by_improvement(panel, qtbot):
    from explorer.analysis.examples import ExampleTable

    table = panel.model.table
    rng = np.random.default_rng(0)
    before = ExampleTable({**table.columns, "bleu": rng.random(len(table)) * 100}, True,
                          bleu_stats=table.bleu_stats, tokens=table.tokens)
    panel.pinned = before
    panel.model.set_table(table, before)
    change = panel.model.names.index("change")
    panel.view.horizontalHeader().setSortIndicator(change, Qt.DescendingOrder)
    shown = np.asarray(_column(panel, "change"), dtype=float)
    want = np.sort(table.columns["bleu"] - before.columns["bleu"])[::-1]
    assert shown == pytest.approx(want, abs=0.01)  # the cells show two decimals


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """RNNsearch and RNNencdec in miniature: run folders of `explorer train --out`."""
    from explorer.cli import main as explorer_main

    root = tmp_path_factory.mktemp("runs")
    for name, attention in (("search", "additive"), ("encdec", "none")):
        assert explorer_main(["train", "--task", "reverse", "--arch", "seq2seq", "--cell", "gru",
                              "--attention", attention, "--steps", "3", "--eval-every", "0",
                              "--batch-size", "8", "--seed", "1", "--out", str(root / name)]) == 0
    return root


def test_every_compared_run_is_a_line_of_the_length_plot(panel, qtbot, tiny_workspace, two_runs):
    from explorer.analysis.examples import length_buckets
    from explorer.training.checkpoint import load_checkpoint
    from explorer.ui.panels.runs import RunsPanel

    runs = RunsPanel(panel.bus)
    qtbot.addWidget(runs)
    assert not panel.runs_button.isEnabled()
    runs.add_run(two_runs / "search")
    runs.add_run(two_runs / "encdec")
    assert panel.runs_button.isEnabled() and list(panel.run_folders) == ["search", "encdec"]
    with qtbot.waitSignal(panel.runs_runner.done, timeout=60_000):
        qtbot.mouseClick(panel.runs_button, Qt.LeftButton)
    series = panel.length_plot.series
    assert [label.split(" · ")[0] for label, _ in series[1:]] == ["search", "encdec"]
    first = length_buckets(panel.model.table)
    width = first[0].high - first[0].low + 1
    for label, buckets in series[1:]:  # each run's own model on the open model's examples
        workspace = load_checkpoint(two_runs / label.split(" · ")[0], load_data=False,
                                    load_state=False)
        want = length_buckets(evaluate_examples(workspace, examples_of(tiny_workspace)), width=width)
        assert [(b.label, b.bleu) for b in buckets] == [(b.label, pytest.approx(b.bleu)) for b in want]
    runs.remove_run("encdec")
    assert [label.split(" · ")[0] for label, _ in panel.length_plot.series[1:]] == ["search"]
    runs.shutdown()
