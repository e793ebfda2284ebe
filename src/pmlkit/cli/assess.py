"""``pmlkit assess``: the PML of a mechanism under a prior or an uncertainty set.

Examples::

    pmlkit assess --mechanism sex.json --prior 0.33,0.67
    pmlkit assess --mechanism sex.json --reference adult.test --names adult \\
        --column sex --delta 1e-6

With ``--prior``: the PML of every outcome ``l(X -> y)`` (Def. PML), ``eps_min`` (the
largest), maximal leakage and the LDP eps of the matrix. With ``--reference``: the same at
the estimate ``p_hat``, then over the confidence set around it (``--confidence``, default the
l1-ball of Theorem 2): the exact worst case ``C(W, P)`` (Definition 5), the exact
sensitivity ``S(W, P)`` and the paper's closed-form bounds (Section 4.4, Theorem 4,
Theorem 3); ``--target EPS`` adds ``delta_min`` (Corollary 3).

``--mechanism`` repeated for the same column (a re-run of the release through another
mechanism, with fresh randomness) reports each mechanism as above and then the exact
leakage of the combined release (:func:`pmlkit.release_leakage`): per-release eps do not
add up, the combined value is the one to sign off.
"""

from __future__ import annotations

import math
from typing import Any

import click

from ._common import (
    UserPath,
    certificate_line,
    csv_from_options,
    csv_options,
    emit,
    json_option,
    load_mechanism,
    missing_option,
    progress_display,
    progress_enabled,
    progress_option,
    renamed_option,
    steps,
)
from ._numeric import assess_reference, grid_for, numeric_option


def _parse_prior(text: str) -> list[float]:
    from ..errors import ValidationError

    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValidationError(f"--prior must be comma-separated numbers, got {text!r}") \
            from None


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _set_methods() -> list[str]:
    try:
        from ..confidence import METHODS

        return list(METHODS)
    except ImportError:  # pragma: no cover
        return ["l1"]


@click.command(name="assess")
@click.option("--mechanism", "mech_paths", required=True, multiple=True,
              type=UserPath(dir_okay=False),
              help="Mechanism JSON file (from pmlkit design or Mechanism.save); repeat it "
                   "for releases of the same column through several mechanisms.")
@click.option("--prior", default=None, metavar="P1,P2,...",
              help="A known prior, in the order of the mechanism's input labels.")
@click.option("--reference", default=None, type=UserPath(dir_okay=False),
              help="CSV or Parquet file of a reference sample (instead of --prior).")
@click.option("--column", default=None, help="Column of the reference sample.")
@click.option("--delta", type=float, default=None,
              help="Failure probability of the confidence set (with --reference).")
@renamed_option("--confidence", "--set", "set_method",
                type=click.Choice(_set_methods()), default="l1",
              show_default=True, help="Confidence set around the estimate.")
@click.option("--target", type=float, default=None,
              help="Also report delta_min to certify this eps (Cor. deltamin).")
@numeric_option
@missing_option()
@csv_options
@progress_option
@json_option
def command(mech_paths: tuple[str, ...], prior: str | None, reference: str | None,
            column: str | None, delta: float | None, set_method: str, target: float | None,
            names: str | None, skip_rows: int | None, strip: bool | None,
            na_values: tuple[str, ...], progress: bool | None, as_json: bool,
            numeric: str | None = None, missing: str = "error") -> int:
    """Assess the PML of a mechanism under a prior or a confidence set."""
    if (prior is None) == (reference is None):
        raise click.UsageError("give exactly one of --prior or --reference")
    if reference is not None and (column is None or delta is None):
        raise click.UsageError("--reference needs --column and --delta")
    mechs = [load_mechanism(f, allow_uncertified=True) for f in mech_paths]
    grids = [grid_for(m, numeric, f) for f, m in zip(mech_paths, mechs, strict=True)]
    for f, m in zip(mech_paths, mechs, strict=True):
        if m.input_labels != mechs[0].input_labels:
            raise click.BadParameter(
                f"{f} has input labels {', '.join(map(str, m.input_labels[:20]))} but "
                f"{mech_paths[0]} has {', '.join(map(str, mechs[0].input_labels[:20]))}: "
                "several mechanisms are releases of the same column", param_hint="'--mechanism'")
    docs, texts, sets = [], [], []
    for f, m in zip(mech_paths, mechs, strict=True):
        doc, lines, cs = _assess_one(f, m, prior, reference, column, delta, set_method,
                                     target, names, skip_rows, strip, na_values, progress,
                                     missing, grid=grids[mech_paths.index(f)])
        docs.append(doc)
        texts.append("\n".join(lines))
        sets.append(cs)
    if len(mechs) == 1:
        emit(as_json, docs[0], texts[0])
        return 0
    from ..joint import release_leakage

    p = docs[0]["prior"]
    combined: dict[str, Any] = {"mechanism_files": list(mech_paths),
                      "eps_min": release_leakage([m.matrix for m in mechs], prior=p)}
    lines = [f"combined release of the column through {', '.join(mech_paths)} (fresh "
             "randomness each):",
             f"  exact eps_min of the combined release = {_fmt(combined['eps_min'])} under "
             f"{'the given prior' if prior is not None else 'the estimate p_hat'}"]
    if sets[0] is not None:
        combined["worst_case_eps"] = release_leakage([m.matrix for m in mechs],
                                                     uncertainty_set=sets[0].set)
        lines.append(f"  exact worst-case eps of the combined release over the "
                     f"{set_method} confidence set = {_fmt(combined['worst_case_eps'])}")
    warning = ("per-release eps do not add up: the combined release's eps is the one to "
               "sign off, not the sum of the per-mechanism values above")
    lines.append(f"  warning: {warning}")
    emit(as_json, {"mechanisms": docs, "combined": combined, "warning": warning},
         "\n\n".join([*texts, "\n".join(lines)]))
    return 0


def _assess_one(mech_path: str, mech: Any, prior: str | None, reference: str | None,
                column: str | None, delta: float | None, set_method: str,
                target: float | None, names: str | None, skip_rows: int | None,
                strip: bool | None, na_values: tuple[str, ...],
                progress: bool | None, missing: str = "error", grid: Any = None
                ) -> tuple[dict[str, Any], list[str], Any]:
    """One mechanism's report (the single-mechanism output); returns (doc, text lines,
    the confidence set or None)."""
    import numpy as np

    from .._validation import as_distribution, check_prior_matches
    from ..leakage import eps_min, ldp_epsilon, maximal_leakage, pml

    w = mech.matrix
    cs = None
    doc: dict[str, Any] = {"mechanism_file": mech_path, "input_labels": list(mech.input_labels),
                 "output_labels": list(mech.output_labels)}
    lines = [f"mechanism {mech_path}: {mech.n_inputs} inputs x {mech.n_outputs} outputs "
             f"(designer {mech.designer})", certificate_line(mech)]
    doc["certified"] = mech.certified
    with steps(3, "assess", progress_enabled(progress)) as advance:
        if prior is not None:
            p = as_distribution(_parse_prior(prior), "prior")
            check_prior_matches(w, p)
            est = None
            where = "the given prior"
        else:
            from ._common import read_reference

            assert reference is not None and column is not None  # checked above
            csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=reference)
            if grid is None:
                est = read_reference(reference, column, csv, categories=mech.input_labels,
                                     missing=missing)
            else:  # a numeric column: clamped and rounded onto the grid, counted
                if missing != "error":
                    raise click.BadParameter(
                        "a numeric reference (--numeric) takes only --missing error: the "
                        "grid has no missing value", param_hint="'--missing'")
                est, line = assess_reference(reference, column, csv, mech, grid)
                lines.append(line)
                doc["numeric"] = {"grid": grid.to_dict(), "reference_encoding": line}
            p = np.asarray(est.p)
            where = f"the estimate p_hat from m = {est.m} samples"
            doc["estimate"] = est.to_dict()
        advance("prior")
        per_outcome = pml(w, p)
        doc.update({"prior": p.tolist(), "pml": dict(zip(map(str, mech.output_labels),
                                                         per_outcome.tolist(), strict=True)),
                    "eps_min": eps_min(w, p), "maximal_leakage": maximal_leakage(w),
                    "ldp_epsilon": ldp_epsilon(w)})
        lines.append(f"under {where} ({', '.join(f'{lab}: {q:.4g}' for lab, q in zip(mech.input_labels, p, strict=True))}):")  # noqa: E501
        for lab, v in zip(mech.output_labels, per_outcome, strict=True):
            lines.append(f"  PML of outcome {lab!r}: {_fmt(float(v))}")
        lines.append(f"  eps_min (largest PML) = {_fmt(doc['eps_min'])}; maximal leakage = "
                     f"{_fmt(doc['maximal_leakage'])}; LDP eps of the matrix = "
                     f"{_fmt(doc['ldp_epsilon'])}")
        from ..plain import plain_sentence

        doc["plain_words"] = plain_sentence(doc["eps_min"], where=f"under {where}")
        lines.append(f"  {doc['plain_words']}")
        if est is not None:
            assert delta is not None
            cs = _assess_set(mech, est, p, float(delta), set_method, target, doc, lines)
        advance("worst case")
    if mech.certified_eps is not None:
        lines.append(f"recorded certified eps in the file: {_fmt(mech.certified_eps)}")
    from ..design.summary import summarize_mechanism

    with progress_display("pmlkit assess", progress_enabled(progress)) as say:
        say("summary: simulating releases for the expected estimation error")
        summary = summarize_mechanism(mech, p)
    doc["summary"] = summary.to_dict()
    lines.append(str(summary))
    return doc, lines, cs


def _assess_set(mech: Any, est: Any, p: Any, delta: float, set_method: str,
                target: float | None, doc: dict[str, Any], lines: list[str]) -> Any:
    from ..bounds import delta_min, eps_bound, lipschitz_bound, sensitivity_bound
    from ..confidence import confidence_set
    from ..leakage import eps_min
    from ..sets import L1Ball
    from ..worstcase import leakage_capacity, leakage_sensitivity

    w = mech.matrix
    cs = confidence_set(est.counts, delta, confidence=set_method)
    uset = cs.set
    cap = leakage_capacity(w, uset)
    sens = leakage_sensitivity(w, p, uset)
    e0 = eps_min(w, p)
    res: dict[str, Any] = {"method": set_method, "delta": delta, "set": uset.to_dict(),
                 "description": cs.description, "worst_case_eps": cap,
                 "sensitivity": sens, "bounds": {}}
    lines.append(f"over the {set_method} confidence set (P[true distribution outside] <= "
                 f"{delta:.3g}):")
    lines.append(f"  exact worst-case eps C(W, P) = {_fmt(cap)}  [Def. localcap]")
    lines.append(f"  exact sensitivity S(W, P) = {_fmt(sens)}  [Def. leakagesensitivity]")
    from ..plain import plain_sentence

    res["plain_words"] = plain_sentence(cap)
    lines.append(f"  {res['plain_words']}")
    if isinstance(uset, L1Ball):
        beta = float(uset.radius)
        b = {"eps_bound": float(eps_bound(eps=e0, beta=beta)),
             "sensitivity_bound": float(sensitivity_bound(p, eps=e0, beta=beta)),
             "lipschitz_bound": float(lipschitz_bound(capacity=cap, distance=beta))}
        res["bounds"] = b
        lines.append(f"  paper's bounds with beta = {beta:.6g}: eps_min + log term "
                     f"(Section 4.4) = {_fmt(b['eps_bound'])}; sensitivity bound "
                     f"(Theorem 4) = {_fmt(b['sensitivity_bound'])}; |eps_min change| "
                     f"<= {_fmt(b['lipschitz_bound'])} (Theorem 3)")
    if target is not None:
        dm = float(delta_min(eps=e0, eps_target=target, m=est.m, n=est.n))
        res["bounds"]["delta_min"] = {"eps_target": target, "delta_min": dm}
        lines.append(f"  delta needed to certify eps {target:g} from eps_min {_fmt(e0)} "
                     f"with m = {est.m}: {dm:.3g} (Corollary 3)")
    doc["set"] = res
    return cs
