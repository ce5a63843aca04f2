"""A small PyTorch training loop; prints every loss to full precision.
Used by `make demo` and by the byte-identical preload test.  --times FILE
writes each step's wall time (seconds) there, one a line, so that stdout
stays the same from run to run; --device cuda moves each batch to the GPU."""
import argparse
import time
import torch

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=200)
ap.add_argument("--batch", type=int, default=256)
ap.add_argument("--times", default=None)
ap.add_argument("--device", default="cpu")
ap.add_argument("--hidden", type=int, default=512)
args = ap.parse_args()
dev = torch.device(args.device)

torch.manual_seed(0)
torch.set_num_threads(2)
model = torch.nn.Sequential(
    torch.nn.Linear(256, args.hidden), torch.nn.ReLU(),
    torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
    torch.nn.Linear(args.hidden, 10)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
w_true = torch.randn(256, 10)
times = []
for step in range(args.steps):
    t0 = time.perf_counter()
    x = torch.randn(args.batch, 256)       # a fresh large CPU tensor each step
    y = (x @ w_true).argmax(dim=1)
    x, y = x.to(dev), y.to(dev)            # host-to-device copies on a GPU
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step:4d} loss {loss.item()!r}")
    times.append(time.perf_counter() - t0)
if args.times:
    with open(args.times, "w") as f:
        f.write("".join(f"{t!r}\n" for t in times))
