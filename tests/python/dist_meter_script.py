"""Run by tests/python/test_distributed.py under `torchrun --nproc_per_node 2` on the CPU (gloo):
each rank trains a tiny MLP on its own batch (rank r: batch 8 + 8 r, so the ranks' work and
times differ), meters its steps with flopmeter.Meter, and the job prints one summary. Under
tensor parallelism ("tp": parallelize_module, the first linear column-parallel, the second
row-parallel) every rank runs the same batch of 8 and each prints
`FLOPMETER_TP_LAYERS <rank> <layers>`: the layers its Meter counted; then a causal attention
block split by heads (q, k, v column-parallel, o row-parallel) prints its counts the same way.

    torchrun --standalone --nproc_per_node 2 tests/python/dist_meter_script.py ddp fsdp tp

Each mode runs in turn in the same job (one start-up for both) and prints its summary once;
rank 0 then prints `FLOPMETER_JSON <mode> <summary>` (the gathered summary as JSON) and
`FLOPMETER_FIRST <mode> <summary>` (the one gathered after 4 of the 8 steps). Last, rank 0
prints `FLOPMETER_COUNT <batch> <totals>` for each rank's batch: a count of the unsharded model
made apart from any Meter, for the test to compare the ranks' figures against, and
`FLOPMETER_LAYERS 8 <layers>`: that count's layers at batch 8.
"""
import json
import sys

import torch
import torch.distributed as dist

import flopmeter


class Attention(torch.nn.Module):
    """A causal self-attention block written for tensor parallelism: its head count is the
    rank's (set to heads / ranks once q, k, v are split by columns), as PyTorch's tutorial
    does."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = (m(x).view(b, t, self.heads, -1).transpose(1, 2)
                   for m in (self.q, self.k, self.v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


def run_attention(rank):
    """Tensor-parallel attention: rank 0 prints `FLOPMETER_TPA_FULL <layers>` (the unsharded
    block's count) and each rank `FLOPMETER_TPA <rank> <layers>` (its Meter's)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    torch.manual_seed(0)
    block = Attention()
    x = torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(0))
    if rank == 0:
        print("FLOPMETER_TPA_FULL %s" % json.dumps(flopmeter.count(block, (x,)).to_dict()
                                                   ["layers"]), flush=True)
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    parallelize_module(block, mesh, {"q": ColwiseParallel(), "k": ColwiseParallel(),
                                     "v": ColwiseParallel(), "o": RowwiseParallel()})
    block.heads //= dist.get_world_size()
    block(x).sum().backward()   # it trains as split
    meter = flopmeter.Meter(block, (x,), peak=1e12)
    print("FLOPMETER_TPA %d %s" % (rank, json.dumps(meter._count["layers"])), flush=True)


def run(mode, rank, x, y):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 8))
    if mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
        meter = flopmeter.Meter(model, (x,), peak=1e12, warmup=1)   # unwraps DDP's .module
    elif mode == "fsdp":
        from torch.distributed.fsdp import fully_shard
        meter = flopmeter.Meter(model, (x,), peak=1e12, warmup=1)   # before sharding
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(model)
        try:  # a sharded module cannot be counted as written: the error says what to do
            flopmeter.Meter(model, (x,), peak=1e12)
            raise SystemExit("a Meter of an FSDP2-sharded module did not refuse it")
        except flopmeter.FlopmeterError as e:
            assert "before fully_shard" in str(e), str(e)
    elif mode == "tp":
        # tensor parallel: the first linear split by output columns, the second by input
        # columns; every rank runs the same batch (the split is of the layers, not the data)
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                       parallelize_module)
        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        meter = flopmeter.Meter(model, (x,), peak=1e12, warmup=1)   # this rank's share
        print("FLOPMETER_TP_LAYERS %d %s" % (rank, json.dumps(meter._count["layers"])),
              flush=True)
        assert all(isinstance(p, torch.distributed.tensor.DTensor)
                   for p in model.parameters()), "the count left a parameter unsharded"
        assert [len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model] == \
            [2, 0, 2], "the count did not put back the parallel styles' hooks"
    else:
        raise SystemExit("usage: dist_meter_script.py ddp|fsdp|tp ...")

    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    meter.reset()
    first = None
    for i in range(8):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        meter.step()
        if i == 3:
            first = meter.summary()   # a collective: both ranks reach it at step 4
    s = meter.print_summary()         # prints once, on rank 0
    if rank == 0:
        print("FLOPMETER_JSON %s %s" % (mode, json.dumps(s, allow_nan=False)), flush=True)
        print("FLOPMETER_FIRST %s %s" % (mode, json.dumps(first, allow_nan=False)), flush=True)


def main():
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    batches = [8 + 8 * r for r in range(world)]   # the ranks' work and times differ
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(batches[rank], 32, generator=g)
    y = torch.randint(0, 8, (batches[rank],), generator=g)
    for mode in sys.argv[1:]:
        if mode == "tp":   # one batch for every rank: batch 8, the same values
            g = torch.Generator().manual_seed(0)
            run(mode, rank, torch.randn(8, 32, generator=g),
                torch.randint(0, 8, (8,), generator=g))
            run_attention(rank)
        else:
            run(mode, rank, x, y)
    if rank == 0:
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 8))
        for b in batches:
            d = flopmeter.count(model, (torch.randn(b, 32),)).to_dict()
            print("FLOPMETER_COUNT %d %s" % (b, json.dumps(d["totals"])), flush=True)
            if b == 8:
                print("FLOPMETER_LAYERS 8 %s" % json.dumps(d["layers"]), flush=True)
    dist.barrier()   # gloo may abort a process that leaves while its peer still sends
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
