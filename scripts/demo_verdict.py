"""make demo's verdict on step times: is the difference between the run
without hostpin and the run with it clear, or noise?

A difference counts as clear only when it is over 10% of the median and
each run's median lies outside the other run's min..max: on a busy machine
step times spread widely.  Every figure here is in seconds; the table
converts to milliseconds for display only.

    python3 demo_verdict.py PLAIN.times HOSTPIN.times
prints the verdict for two files of step times (one a line, in seconds),
as scripts/demo words it; tests/preload/cases/175-demo_verdict.sh feeds it
synthetic timings.
"""
import statistics
import sys


def steady(times):
    """The step times after the first tenth, which warms up."""
    return times[len(times) // 10:] or times


def compare(plain, hostpin):
    """(change of hostpin's median over plain's in percent, clear?)"""
    mp, mh = statistics.median(plain), statistics.median(hostpin)
    d = (mh - mp) / mp * 100
    clear = (abs(d) > 10
             and not min(plain) <= mh <= max(plain)
             and not min(hostpin) <= mp <= max(hostpin))
    return d, clear


def words(plain, hostpin):
    """The verdict on step time, in the demo's words."""
    d, clear = compare(plain, hostpin)
    d = round(d) or 0                     # -0.3% reads +0%, not -0%
    if not clear:
        return f"no clear difference in step time ({d:+.0f}%, within the spread)"
    if d < 0:
        return (f"steps {-d:.0f}% faster: hostpin keeps freed batch buffers mapped "
                f"for reuse, so new batches take no page faults")
    return f"steps {d:.0f}% slower: the cost of locking pages without a device to use them"


def read(path):
    return steady([float(line) for line in open(path) if line.strip()])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: demo_verdict.py PLAIN.times HOSTPIN.times")
    print(words(read(sys.argv[1]), read(sys.argv[2])))
