"""`run` refuses models and inputs over its memory budget before allocating, and reads only arrays (issue 38)."""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
from rulepass.examples import example_path

from rulepass.api import compile_graph, load_graph, load_rules, run_model
from rulepass.base.diagnostics import RulepassError
from rulepass.base.limits import LimitError, parse_byte_size
from rulepass.cli import main


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_a_model_over_the_budget_is_refused_naming_the_flag() -> None:
    model = compile_graph(load_graph(example_path()), load_rules()).model
    with pytest.raises(RulepassError, match=r"needs \d+ bytes .* over the memory budget of 1024 bytes") as exc:
        run_model(model, ranks=2, max_memory=1024)
    assert "--max-memory" in (exc.value.diagnostics[0].hint or "")
    assert run_model(model, ranks=2, max_memory=1 << 30).outputs  # the same model within a budget runs


def test_an_npz_array_over_the_budget_is_refused_from_its_header(tmp_path: Path) -> None:
    path = tmp_path / "bomb.npz"  # a header claiming 4 GiB and 1 MiB of zeros: nothing is decompressed
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (1 << 30,)})
        z.writestr("x.npy", buf.getvalue() + bytes(1 << 20))
    code, _, err = _cli("run", "--inputs", str(path), "--max-memory", "1G")
    assert code == 1 and "inputs file" in err and "needs 4294967296 bytes" in err and "--max-memory" in err


@pytest.mark.parametrize("kind", ["pickle", "npy", "object"])
def test_inputs_that_are_not_arrays_get_our_error_never_numpys_pickle_advice(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "in.npz"
    if kind == "pickle":
        path.write_bytes(pickle.dumps([1, 2]))
    elif kind == "npy":
        np.save(tmp_path / "in.npy", np.zeros(3))
        (tmp_path / "in.npy").rename(path)
    else:
        np.savez(path, a=np.array([1, "x", None], dtype=object))
    code, _, err = _cli("run", "--inputs", str(path))
    assert code == 1 and "is not an .npz archive of arrays" in err and "allow_pickle" not in err


def test_thread_and_size_arguments_are_bounded() -> None:
    code, _, err = _cli("compile", "--threads", "100000")
    assert code == 2 and "100000 threads is over the limit of 256" in err
    code, _, err = _cli("run", "--max-memory", "lots")
    assert code == 2 and "expected a size in bytes like 512M or 8G" in err
    assert parse_byte_size("512M") == 512 << 20 and parse_byte_size("8 GiB") == 8 << 30 and parse_byte_size("10") == 10
    with pytest.raises(LimitError):
        parse_byte_size("-1G")
