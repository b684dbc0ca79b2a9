import sys, os, gc, time, tempfile, json
sys.path.insert(0, os.getcwd())
import importlib.util
spec = importlib.util.spec_from_file_location("bench_async", "bench/async.py"); b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b)
d = tempfile.mkdtemp()
proc, boot = b.start_broker(d)
gcs = []
t0 = [0.0]
def cb(phase, info):
    if phase == "start": t0[0] = time.perf_counter()
    else: gcs.append((info["generation"], (time.perf_counter() - t0[0]) * 1000))
gc.callbacks.append(cb)
try:
    for backend in ("asyncio", "trio"):
        for mode in ("gc", "nogc"):
            if mode == "nogc": gc.disable()
            else: gc.enable()
            gcs.clear()
            el, lag = b._run_with_lag(backend, lambda: b.produce_ours(boot, f"t{backend}{mode}", 100000, b"x"*100))
            big = sorted(g for g in gcs if g[1] > 1)[-5:]
            print(backend, mode, f"{100000/el:.0f}/s", {k: round(v, 2) for k, v in lag.items()}, "gcs", len(gcs), "gc>1ms", big, flush=True)
finally:
    proc.terminate()
