#!/usr/bin/env python3
"""How far PyTorch's own mixed-precision training step lands from its fp32 step, for the deep
networks whose fp16/bf16 logits test_cuda_backend.c only prints: the same relative L2 error
(||x - ref|| / ||ref||) of logits, loss and gradients, fp32 reference vs autocast fp16/bf16,
batch 8 at 128x128, training mode (batch statistics), random weights and inputs. Run on a GPU
machine with PyTorch: python3 bench/gpu/lowprec_reference.py"""
import torch
import torchvision


def rel(a, b):
    return (torch.linalg.vector_norm((a - b).double()) /
            torch.linalg.vector_norm(b.double())).item()


def step(model, x, y, dtype):
    model.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float(), y)
    loss.backward()
    grads = torch.cat([p.grad.flatten().float() for p in model.parameters()])
    return logits.float().detach(), loss.item(), grads


torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(1)
for name in ("resnet18", "mobilenet_v2", "efficientnet_b0"):
    model = getattr(torchvision.models, name)().cuda().train()
    for m in model.modules():   # dropout off: the two runs must see the same network
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    state = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(8, 3, 128, 128, device="cuda")
    y = torch.randint(0, 1000, (8,), device="cuda")
    ref = step(model, x, y, None)
    for dt in (torch.float16, torch.bfloat16):
        model.load_state_dict(state)
        out = step(model, x, y, dt)
        print(f"{name:16s} {str(dt):15s} logits {rel(out[0], ref[0]):.2e}  "
              f"loss {abs(out[1] - ref[1]) / abs(ref[1]):.2e}  grads {rel(out[2], ref[2]):.2e}")
    model.load_state_dict(state)
