"""What the Recursive Reflector's sandbox and tracing cost, measured in this process.

1. Sandbox: wall time of one ``Sandbox.run`` of a small block (a fresh,
   rlimited, guarded interpreter each time), alone and with ``--threads``
   callers at once (runs/s), and of a block that must be killed (timeout,
   allocation bomb): how long the caller waits -- behind the OS boundary
   (bubblewrap, uid 65534, seccomp) and with the in-process guards alone.
2. Reflection: ``--samples`` simulated traces learned by TraceAnalyser with the
   single-pass Reflector and with RRStep (two sandbox runs per reflection, the
   simulator's script) behind the boundary and behind the guards alone, samples/s each.
3. Tracing: the same single-pass run with OpenTelemetry off (no provider) and on
   (an in-memory exporter, every span kept), samples/s each.

The simulated LLM answers at once (no latency), so these are the overheads
themselves; a real model call takes longer than any of them.

    python benchmarks/reflect_costs.py [--runs 20] [--threads 8] [--samples 40]
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from ace_workers import Reflector, RRStep, SkillManager, TraceAnalyser
from ace_workers.rr import Isolation, RRConfig, Sandbox, SandboxLimits
from ace_workers.sim import SimulatedLLM, failure_traces

BLOCK = "import json\nprint(json.dumps(trace)[:20])\nFINAL({'ok': True})"


def sandbox_figures(runs: int, threads: int, isolation: Isolation) -> None:
    print(f"-- isolation: {isolation.value}")
    sandbox = Sandbox(SandboxLimits(timeout_s=2, memory_mb=256), isolation=isolation)
    variables = {"trace": {"question": "q", "steps": list(range(100))}}
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        sandbox.run(BLOCK, variables)
        times.append(time.perf_counter() - started)
    median_ms, max_ms = statistics.median(times) * 1000, max(times) * 1000
    print(f"sandbox run, one caller: median {median_ms:.0f} ms, max {max_ms:.0f} ms")
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda _: sandbox.run(BLOCK, variables), range(runs)))
    elapsed = time.perf_counter() - started
    print(f"sandbox runs, {threads} callers: {runs / elapsed:.1f} runs/s")
    for name, code in (
        ("endless loop", "while True:\n    pass"),
        ("allocation bomb", "x = bytearray(10**10)"),
    ):
        started = time.perf_counter()
        result = sandbox.run(code, variables)
        print(f"{name}: killed={result.killed} after {time.perf_counter() - started:.2f} s (timeout 2 s)")


def samples_per_second(reflector_for: str, samples: int, isolation: Isolation = Isolation.OS) -> float:
    llm = SimulatedLLM()
    config = RRConfig(isolation=isolation)
    reflector = RRStep(llm, config) if reflector_for == "rr" else Reflector(llm)
    analyser = TraceAnalyser.from_roles(reflector=reflector, skill_manager=SkillManager(llm))
    traces = failure_traces(samples)
    started = time.perf_counter()
    results = analyser.run(traces)
    elapsed = time.perf_counter() - started
    assert all(result.ok for result in results)
    return samples / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--samples", type=int, default=40)
    args = parser.parse_args()

    for isolation in (Isolation.OS, Isolation.GUARDS):
        sandbox_figures(args.runs, args.threads, isolation)
    samples_per_second("single", args.samples)  # warm-up: imports, prompt templates, the simulator
    single = samples_per_second("single", args.samples)
    rr = samples_per_second("rr", args.samples)
    guarded = samples_per_second("rr", args.samples, Isolation.GUARDS)
    print(
        f"reflection, single pass: {single:.1f} samples/s; recursive: {rr:.1f} samples/s"
        f" ({rr / single:.2f}x);"
        f" recursive behind the guards alone: {guarded:.1f} samples/s (boundary: {guarded / rr:.2f}x slower)"
    )

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ace_workers.observability import use_tracer_provider

    off = samples_per_second("single", args.samples)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_tracer_provider(provider)
    on = samples_per_second("single", args.samples)
    spans = len(exporter.get_finished_spans())
    print(f"tracing off: {off:.1f} samples/s; on: {on:.1f} samples/s ({on / off:.2f}x, {spans} spans)")


if __name__ == "__main__":
    main()
