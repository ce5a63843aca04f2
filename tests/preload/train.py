"""A small PyTorch CPU training loop; prints every loss to full precision.
Used by `make demo` and by the byte-identical preload test."""
import argparse
import torch

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=200)
ap.add_argument("--batch", type=int, default=256)
args = ap.parse_args()

torch.manual_seed(0)
torch.set_num_threads(2)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
w_true = torch.randn(256, 10)
for step in range(args.steps):
    x = torch.randn(args.batch, 256)       # a fresh large CPU tensor each step
    y = (x @ w_true).argmax(dim=1)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step:4d} loss {loss.item()!r}")
