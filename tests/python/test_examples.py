"""attnrt.examples.train on the CPU (issue 18): it trains, and with the same seed its loss curve
through attnrt's plugins equals transformers' own implementation's within fp32 rounding: Llama
with attnrt's sdpa and flex_attention (no mods: the causal rule) against transformers' sdpa, gpt-oss (sinks, a sliding window on every other
layer) with attnrt's sdpa against transformers' eager (gpt-oss has no SDPA support there)."""
import csv
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tqdm")
from attnrt.examples import train  # noqa: E402


def losses(path):
    with open(path) as f:
        return [float(r["loss"]) for r in csv.DictReader(f)]


def run(tmp_path, arch, implementation, steps):
    path = tmp_path / f"{arch}_{implementation.replace(':', '_')}.csv"
    assert train.main(["--arch", arch, "--attn_implementation", implementation, "--steps", str(steps), "--batch", "4",
                       "--seqlen", "128", "--device", "cpu", "--quiet", "--csv", str(path)]) == 0
    return losses(path)


@pytest.mark.parametrize("arch,ours_impl,baseline,steps", [("llama", "sdpa", "hf:sdpa", 20),
                                                          ("llama", "flex_attention", "hf:sdpa", 20),
                                                          ("gptoss", "sdpa", "hf:eager", 8)])
def test_loss_curve_equals_transformers_own(tmp_path, arch, ours_impl, baseline, steps):
    ours = run(tmp_path, arch, ours_impl, steps)
    theirs = run(tmp_path, arch, baseline, steps)
    assert len(ours) == len(theirs) == steps
    assert ours[-1] < ours[0] - 1.0, f"did not learn: {ours}"
    worst = max(abs(a - b) for a, b in zip(ours, theirs))
    assert worst < 1e-3, f"loss curves differ by {worst}: {ours} vs {theirs}"


def test_runs_as_a_module_with_the_seeds_flag():
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "attnrt.examples.train", "--attn_implementation", "eager", "--steps", "2",
                        "--batch", "2", "--seqlen", "64", "--device", "cpu"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "llama eager (attnrt:eager) on cpu fp32: 2 steps, loss " in r.stdout
    assert "tokens/s" in r.stdout
    assert "2/2" in r.stderr  # tqdm's bar


def test_unknown_arch_is_refused():
    with pytest.raises(SystemExit):
        train.parse_args(["--arch", "bert"])
