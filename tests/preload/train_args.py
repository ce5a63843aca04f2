"""What train.py and its fakes' stand-in train_fakes.py share: the
arguments, the line printed per step, and the --times file."""
import argparse


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--times", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--hidden", type=int, default=512)
    return ap.parse_args()


def step_line(step, loss):
    """Every loss to full precision (repr), the same from run to run."""
    return f"step {step:4d} loss {loss!r}"


def write_times(path, times):
    """Each step's wall time (seconds), one a line, when --times was given."""
    if path:
        with open(path, "w") as f:
            f.write("".join(f"{t!r}\n" for t in times))
