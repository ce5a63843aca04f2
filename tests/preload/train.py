"""A small PyTorch training loop; prints every loss to full precision.
Used by `make demo` and by the byte-identical preload test.  --times FILE
writes each step's wall time (seconds) there, one a line, so that stdout
stays the same from run to run; --device cuda moves each batch to the GPU."""
import sys
import time
import torch

sys.dont_write_bytecode = True  # no __pycache__ beside the tests
import train_args  # noqa: E402 (the arguments, shared with train_fakes.py)

args = train_args.parse()
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
    print(train_args.step_line(step, loss.item()))
    times.append(time.perf_counter() - t0)
train_args.write_times(args.times, times)
