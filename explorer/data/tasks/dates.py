"""The dates task: a date written the way people write it -> the ISO date `YYYY-MM-DD`.

Dates are drawn uniformly from 1970-01-01 to 2049-12-31. Two-digit years follow the usual pivot
(Python's `%y`): 70..99 are 19xx, 00..49 are 20xx. Slashes and dots are day first (European), so
every source has exactly one reading. The formats (for 3 March 2021):

    3 March 2021        March 3, 2021       03/03/2021          Wed 3 Mar 21
    3rd of March 2021   wednesday, march 3, 2021               3 mar 2021
    Mar 3 2021          03.03.2021          2021.03.03.         03-Mar-2021
    Wednesday 3 March 2021                  3/3/21
"""

from __future__ import annotations

import datetime
import random

FIRST_DAY = datetime.date(1970, 1, 1)
LAST_DAY = datetime.date(2049, 12, 31)
# Spelled out, not calendar.month_name: that follows the process locale, which Qt may change.
MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]
MONTH_ABBR = [m[:3] for m in MONTHS]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def ordinal(day: int) -> str:
    """1 -> 1st, 2 -> 2nd, 3 -> 3rd, 11 -> 11th, 22 -> 22nd."""
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _formats(d: datetime.date) -> list[str]:
    month, month_abbr = MONTHS[d.month - 1], MONTH_ABBR[d.month - 1]
    weekday = WEEKDAYS[d.weekday()]
    yy = f"{d.year % 100:02d}"
    return [
        f"{d.day} {month} {d.year}",
        f"{month} {d.day}, {d.year}",
        f"{d.day:02d}/{d.month:02d}/{d.year}",
        f"{weekday[:3]} {d.day} {month_abbr} {yy}",
        f"{ordinal(d.day)} of {month} {d.year}",
        f"{weekday.lower()}, {month.lower()} {d.day}, {d.year}",
        f"{d.day} {month_abbr.lower()} {d.year}",
        f"{month_abbr} {d.day} {d.year}",
        f"{d.day:02d}.{d.month:02d}.{d.year}",
        f"{d.year}.{d.month:02d}.{d.day:02d}.",
        f"{d.day:02d}-{month_abbr}-{d.year}",
        f"{weekday} {d.day} {month} {d.year}",
        f"{d.day}/{d.month}/{yy}",
    ]


NUM_FORMATS = len(_formats(FIRST_DAY))


def format_date(d: datetime.date, style: int) -> str:
    """`d` written in format number `style` (0 <= style < NUM_FORMATS)."""
    return _formats(d)[style]


def dates_pair(rng: random.Random) -> tuple[str, str]:
    day = FIRST_DAY + datetime.timedelta(days=rng.randint(0, (LAST_DAY - FIRST_DAY).days))
    return format_date(day, rng.randrange(NUM_FORMATS)), day.isoformat()
