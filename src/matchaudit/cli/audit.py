"""``matchaudit audit`` (the main job), ``matchaudit demo`` (it, on the embedded synthetic data) and
``matchaudit schema``."""

from __future__ import annotations

import json
import math
import shlex
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import typer
from rich.markup import escape
from rich.console import Console
from rich.table import Table

from matchaudit.choices import BACKENDS, DUPLICATE_POLICIES, FORMATS, FTA_POLICIES, INTERVAL_METHODS
from matchaudit.cli.app import app
from matchaudit.formatting import fmt, interval, operating_point, threshold as threshold_text, with_counts
from matchaudit.cli.common import (NAME_COLUMN, folder_path, dcf_points, err_console, floats, margin, names, output_dir, report_file,
                                   user_errors)
from matchaudit.errors import InputError
from matchaudit.metrics.small_groups import MIN_IDENTITIES

if TYPE_CHECKING:
    from matchaudit.auditing import Audit
    from matchaudit.model import MatchData

console = Console()


class RuleOpt(str, Enum):
    ge = ">="
    gt = ">"


class MetricOpt(str, Enum):
    cosine = "cosine"
    euclidean = "euclidean"


class ZeroOpt(str, Enum):
    report = "report"
    upper_bound = "upper-bound"


def _print_summary(result: Audit, out: Path, figures: bool) -> None:
    w = result.config.weightings[0]
    first: dict[tuple, dict] = {}  # each point's interval of the free rate by the first method computed
    for r in result.interval_records or []:
        first.setdefault((r["weighting"], r["group"], r["metric"], r["kind"], r["target"]), r)
    table = Table(title=f"Operating points ({w} weighting, accept iff score {result.config.rule} threshold)")
    heads = ["operating point", "group", "threshold", "FMR (k/n)", "FNMR (k/n)"] + (["interval"] if first else [])
    for col in heads:
        table.add_column(col, **(NAME_COLUMN if col == "group" else {}))
    for p in result.exact.operating_points:
        if p["weighting"] != w:
            continue
        flag = " [yellow](below resolution)[/]" if p["below_resolution"] else ""
        free = "FMR" if p["kind"] == "fnmr_target" else "FNMR"
        iv = first.get((w, p["group"], free, p["kind"], p["target"]))
        span = [f"{free} {interval(iv['low'], iv['high'], 'rate')} {iv['method']}" if iv else "—"] if first else []
        table.add_row(operating_point(p["kind"], p["target"]) + flag, p["group"],
                      threshold_text(p["threshold"]), with_counts(p["fmr"], p["fmr_errors"], p["fmr_comparisons"]),
                      with_counts(p["fnmr"], p["fnmr_errors"], p["fnmr_comparisons"]), *span)
    console.print(table)
    attacks = [r for r in result.attack_records or [] if r["weighting"] == w]
    if attacks:
        level = fmt(attacks[0]["level"], "rate", 2)
        table = Table(title=f"Presentation attacks accepted (IAPMR; {level} interval clustered by attacked subject)")
        for col in ("operating point", "group", "threshold", "IAPMR (k/n)", "interval"):
            table.add_column(col, **(NAME_COLUMN if col == "group" else {}))
        for r in attacks:
            table.add_row(operating_point(r["kind"], r["target"]), r["group"], threshold_text(r["threshold"]),
                          with_counts(r["iapmr"], r["accepted"], r["attacks"]), interval(r["low"], r["high"], "rate"))
        console.print(table)
    for msg in result.to_dict()["summary"]["warnings"]:
        err_console.print(f"[yellow]Warning:[/] {escape(msg)}", highlight=False, soft_wrap=True)
    console.print(f"Results written to [bold]{escape(str(out))}[/] (results.json, CSV tables{', DET plots' if figures else ''}).")


def run_audit(data: MatchData, out: Path, command: str, quiet: bool = False, det_scale: str = "probit",
              figures: bool = True, before_save: Callable[[Audit], Any] | None = None, **options: Any) -> Audit:
    """The library's :func:`matchaudit.audit` with ``options``, saved into ``out`` (results.json, CSV tables and,
    with ``figures``, the figures), with progress and the operating-point table unless ``quiet``. ``before_save``
    runs on the audit before anything is written (what it refuses leaves ``out`` as it was)."""
    from matchaudit.auditing import audit as ma_audit

    if not quiet:
        console.print(f"Auditing {data.n_comparisons():,} comparisons...")
    result = ma_audit(data, progress=not quiet, **options)
    if before_save is not None:
        before_save(result)
    result.save(out, command, det_scale=det_scale, figures=figures)
    if not quiet:
        _print_summary(result, out, figures)
        _print_portability(result)
    return result


@app.command("audit")
@user_errors
def audit(
    out: Path = typer.Option(Path("matchaudit-out"), "--out", parser=folder_path, help="Output directory (created if missing)."),
    samples: Path = typer.Option(None, "--samples", help="Samples table (CSV/TSV/Parquet): sample id, identity, attributes."),
    embeddings: Path = typer.Option(None, "--embeddings", help=".npy embeddings aligned with --samples rows."),
    embedding_col: str = typer.Option(None, "--embedding-col", help="Parquet list column holding embeddings (instead of --embeddings)."),
    pairs: Path = typer.Option(None, "--pairs", help="With --samples: only these sample pairs (columns sample_a, sample_b) instead of all pairs."),
    comparisons: Path = typer.Option(None, "--comparisons", help="Comparison table (CSV/TSV/Parquet): one row per comparison with a score."),
    fmt: str = typer.Option("tidy", "--format", help=f"Input format: {'|'.join(FORMATS)} (see docs/formats.md)."),
    trials: Path = typer.Option(None, "--trials", help="Trial list: Kaldi/wespeaker (enrol test target|nontarget), VoxCeleb/VoxSRC (label enrol test) or NIST SRE (modelid segmentid side)."),
    scores: Path = typer.Option(None, "--scores", help="The score file of --format (bob, bob-csv, frvt match log, wespeaker, NIST SRE output, the scores for --trials) or the score matrix (score-matrix)."),
    speaker_of: str = typer.Option(None, "--speaker-of", "--subject-of", help="Identity of each id: prefix, path, or a file of '<id> <identity>' lines (utt2spk; frvt: template -> subject)."),
    key: Path = typer.Option(None, "--key", help="NIST SRE trial key (modelid segmentid side targettype) or BOSARIS key (model testseg target|nontarget)."),
    impostor_scores: Path = typer.Option(None, "--impostor-scores", help="--format pyeer: the impostor score file (pyeer's -i); --scores is the genuine one (-g)."),
    ids: Path = typer.Option(None, "--ids", help="score-matrix: the sample id of each row (one per line; also of each column for one set)."),
    column_ids: Path = typer.Option(None, "--column-ids", help="score-matrix: the sample id of each column (probes x references)."),
    mask: Path = typer.Option(None, "--mask", help="score-matrix: boolean .npy of the matrix's shape, True where a cell is a trial."),
    id_col: str = typer.Option("sample_id", "--id-col", help="Sample id column of --samples."),
    identity_col: str = typer.Option("identity", "--identity-col", help="Identity column of --samples."),
    metric: MetricOpt = typer.Option(MetricOpt.cosine, "--metric", help="Similarity from embeddings: cosine or negated Euclidean distance."),
    score_col: str = typer.Option("score", "--score-col", help="Score column of --comparisons."),
    sample_cols: str = typer.Option("sample_a,sample_b", "--sample-cols", help="The two sample id columns of --comparisons ('' for none)."),
    identity_cols: str = typer.Option("identity_a,identity_b", "--identity-cols", help="The two identity columns of --comparisons ('' for none)."),
    label_col: str = typer.Option(None, "--label-col", help="Genuine/impostor label column (1/0, genuine/impostor, target/nontarget)."),
    metadata: Path = typer.Option(None, "--metadata", help="Subject or sample metadata table giving attributes (and identities) by key."),
    metadata_key: str = typer.Option(None, "--metadata-key", help="Key column of --metadata."),
    distance: bool = typer.Option(False, "--distance", help="Scores are distances (smaller = more alike): negated on load."),
    fta_policy: str = typer.Option("refuse", "--fta-policy", help=f"Comparisons without a score (failures to acquire): {'|'.join(FTA_POLICIES)}: refuse the input, exclude them and report their rate per group, or count them as errors (transaction-level rates)."),
    duplicates: str = typer.Option("keep-both", "--duplicates", help=f"A comparison listed more than once ((a, b) and (b, a): the same sample or enrol/test ids): {'|'.join(DUPLICATE_POLICIES)}: count every row, as trial-list scorers do (default, with a warning), keep the first row, one row with the mean of their scores, or refuse the input. Needs sample ids unless keep-both."),
    template_log: list[Path] = typer.Option(None, "--template-log", help="--format frvt: the driver's template-creation log (id image templateSizeBytes returnCode ...; give it once per log, enrolment and verification): comparisons with a template whose creation failed are failures to enrol, under --fta-policy."),
    return_code_col: str = typer.Option(None, "--return-code-col", help="Return-code column of --comparisons: a non-zero code is a failure to acquire (as in NIST match logs)."),
    group_by: str = typer.Option(None, "--group-by", help="Attribute(s) defining groups, comma-separated for intersections."),
    fmr: str = typer.Option("1e-1,1e-2,1e-3,1e-4", "--fmr", "--far", help="FMR (alias FAR) targets, comma-separated; 1e-2, 1e-3 and 0 are also reported as FMR100, FMR1000 and ZeroFMR."),
    threshold: str = typer.Option("", "--threshold", help="Fixed thresholds to evaluate too (comma-separated)."),
    fnmr: str = typer.Option("", "--fnmr", help="FNMR targets too (comma-separated; the dual operating point, FMR at a fixed FNMR): the threshold at each is the highest observed score whose FNMR over all genuine comparisons is at most the target."),
    claims: Path = typer.Option(None, "--claims", help="A claims file (TOML or YAML, docs/claims.md): after the audit, each claim is answered pass / fail / inconclusive from its intervals (raised to the level the file needs unless --level is given), claims.json/.csv/.xml join --out, and the exit status is 0 / 1 / 3."),
    thresholds_from: Path = typer.Option(None, "--thresholds-from", help="results.json of a development set (or its audit's --out directory): its thresholds at the FMR targets are applied here as fixed thresholds (dev -> eval protocol), with the portability table: per group FMR and FNMR at each, FMR / target, and the threshold the group would need, with intervals."),
    threshold_fmr: str = typer.Option("", "--threshold-fmr", help="The FMR target the --threshold values were set for (one for all, or one per threshold): adds them to the portability table (as --thresholds-from)."),
    rule: RuleOpt = typer.Option(RuleOpt.ge, "--rule", help="Accept iff score >= t (NIST, ISO/IEC 19795-1, bob) or > t (the similarity-scoring paper)."),
    weighting: str = typer.Option("pooled,balanced", "--weighting", help="pooled (each comparison equal) and/or balanced (identity-balanced)."),
    threshold_impostors: str = typer.Option("all", "--threshold-impostors", help="Impostors that set the global threshold: all, same-group, or same:ATTR,... (impostors whose identities share those grouping attributes, e.g. same:sex,age_band: NIST FRTE)."),
    dcf_p_target: float = typer.Option(0.01, "--dcf-p-target", help="minDCF prior of a target (0.01 NIST SRE; 0.05 VoxSRC)."),
    dcf_c_miss: float = typer.Option(1.0, "--dcf-c-miss", help="minDCF cost of a miss."),
    dcf_c_fa: float = typer.Option(1.0, "--dcf-c-fa", help="minDCF cost of a false alarm."),
    fmr_threshold: str = typer.Option("lowest-score", "--fmr-threshold", help="The threshold at each FMR target: lowest-score (the lowest observed score with FMR <= target) or bob (bob.measure's far_threshold, the lowest impostor score with it: reproduces bob's FNMR; with --no-intervals); docs/conventions.md."),
    eer: str = typer.Option("rocch", "--eer", help="EER of the curve summaries: rocch (the ROC convex hull, as BOSARIS), interpolated (between consecutive ROC points, as the NIST SRE'16 scorer and wespeaker report it) closest (FMR and FNMR where they are closest, as speechbrain reports it) or fvc2000 (as pyeer); docs/conventions.md."),
    dcf: str = typer.Option(None, "--dcf", help="Operating points of the calibration and cost metrics (Cllr, minCllr, actual and minimum DCF with intervals): P_target,C_miss,C_fa triples separated by ';', e.g. '0.01,1,1;0.05,1,1' (default: --dcf-p-target, --dcf-c-miss, --dcf-c-fa)."),
    llr: bool = typer.Option(False, "--llr", help="The scores are natural-log likelihood ratios: report Cllr and the actual DCF too (otherwise only minCllr and minDCF)."),
    no_calibration: bool = typer.Option(False, "--no-calibration", help="Skip the calibration and cost metrics and the score distributions (a pass over every comparison, sorted: about half of a default audit's time at 8e6 comparisons)."),
    no_figures: bool = typer.Option(False, "--no-figures", help="Write results.json and the CSV tables only, no figures (drawing them is most of a small audit's time)."),
    zero_policy: ZeroOpt = typer.Option(ZeroOpt.report, "--zero-policy", help="Zero rates in fairness ratios: report inf/NaN with a reason, or substitute one-sided upper bounds."),
    exclude_small_groups: bool = typer.Option(False, "--exclude-small-groups", help="Take the fairness measures (and their intervals) over the groups that are not small only (fewer than --small-group-identities identities, 20 genuine or 20 same-group impostor comparisons); every group is flagged small or not either way, and per-group rates are unchanged."),
    small_group_identities: int = typer.Option(MIN_IDENTITIES, "--small-group-identities", help="The identities below which a group is small (default: identity-level intervals and tests are not validated below it)."),
    ci_method: str = typer.Option(None, "--ci-method", help=f"Interval method ({'|'.join(INTERVAL_METHODS)}), or several comma-separated, each where it applies, side by side; default: wilson at fixed thresholds, double-or-nothing (identities redrawn: a new population of identities, the group tests' question) for everything else; recentered answers for these identities."),
    level: float = typer.Option(0.95, "--level", help="Confidence level of the intervals."),
    n_resamples: int = typer.Option(1000, "--n-resamples", help="Bootstrap replicates."),
    ci_seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap replicates."),
    one_sided: bool = typer.Option(False, "--one-sided", help="One-sided upper bounds (certification)."),
    memory: float = typer.Option(None, "--memory", help="Memory budget of the bootstrap in GB (default: a quarter of this machine's memory): replicates are counted in chunks that fit it, with the same numbers."),
    spill_dir: Path = typer.Option(None, "--spill-dir", help="A folder where the calibration metrics and score distributions may sort the comparisons on disk when they exceed their memory budget (about 62 bytes per comparison; slower: every block of replicates reads them back). Default: they are skipped there, with a warning."),
    band: str = typer.Option("simultaneous", "--band", help="DET bands: simultaneous (sup-t over the FMR range) or pointwise."),
    no_intervals: bool = typer.Option(False, "--no-intervals", help="Skip intervals (exact metrics only)."),
    tests: bool = typer.Option(False, "--tests", help="Also test the groups' FNMR@FMR and FMR gaps at each FMR target (identity-level permutations; raw, Holm and max-T p-values at 1 - --level, BH q-values)."),
    test_resamples: int = typer.Option(999, "--test-resamples", help="Relabellings of the group tests."),
    tests_versus: str = typer.Option("pairs", "--tests-versus", help="What --tests compares: pairs (every pair of groups), rest (each group against the pooled rest: G tests, the view for many groups) or both."),
    equivalence: str = typer.Option(None, "--equivalence", help="A margin lo,hi accepted as fair (e.g. 0.8,1.25): test that every pair of groups' FNMR and FMR ratio at each target lies within it (TOST on --n-resamples identity replicates, at 1 - --level)."),
    equivalence_scale: str = typer.Option("ratio", "--equivalence-scale", help="ratio (A / B) or difference (A - B; a margin such as -0.01,0.01)."),
    det_scale: str = typer.Option("probit", "--det-scale", help="DET axes: probit (normal deviates) or log (log-log, as NIST FRTE)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
    as_json: bool = typer.Option(False, "--json", help="Print results.json to stdout (for pipelines); implies --quiet."),
    report: str = typer.Option(None, "--report", help="Also write the self-contained HTML report to this file (or report.html in this folder: an existing one, or a path ending in '/')."),
    heatmap_order: str = typer.Option(None, "--heatmap-order", help="--report: the grouping attribute that orders the cross-group FMR heat map (default: the first --group-by attribute)."),
    heatmap_aggregate: str = typer.Option(None, "--heatmap-aggregate", help="--report: pool the cross-group FMR heat map into coarser groups, grouping attributes comma-separated (e.g. region or region,sex; pooled weighting)."),
    backend: str = typer.Option("cpu", "--backend", help=f"Where the bootstrap's counting passes run: {'|'.join(BACKENDS)} (dask: a cluster, the optional extra 'distributed'; see docs/scaling.md)."),
    scheduler: str = typer.Option(None, "--scheduler", help="--backend dask: address of a running scheduler (tcp://host:8786); default: a local cluster."),
    workers: int = typer.Option(None, "--workers", help="--backend dask: worker processes of the local cluster (default 2)."),
    condition_cols: str = typer.Option(None, "--condition-cols", help="Trial-condition column(s) of the comparisons (a column of --comparisons or pair-table, or the NIST SRE key's partition columns; comma-separated: their intersections): FNMR and FMR per condition and condition x group at the audit's thresholds, the equalised rate (mean over conditions), differences and interactions with joint identity-bootstrap intervals: conditions.csv, conditions.json (docs/conditions.md)."),
    condition_reference: str = typer.Option(None, "--condition-reference", help="--condition-cols: the condition the others are compared with (default: the first value)."),
    out_of_core: bool = typer.Option(None, "--out-of-core/--in-memory", help="Parquet --comparisons: read it one row group at a time, or load it whole; default: out of core when it would take over a quarter of memory."),
) -> None:
    """Exact per-group FMR/FNMR, thresholds at FMR targets, DET, EER, AUC, minDCF and fairness measures.

    Give --samples with --embeddings (all pairs, or --pairs), or --comparisons (a scored table), or another
    --format: bob, bob-csv, frvt (--scores), kaldi, voxceleb, voxsrc (--trials, --scores), wespeaker (--scores),
    nist-sre and bosaris (--scores, --key), pyeer (--scores, --impostor-scores), pair-table (--comparisons),
    score-matrix (--scores, --ids, --metadata),
    identity-embeddings (--embeddings); see docs/formats.md.

    Example:

        matchaudit audit --samples samples.parquet --embeddings embeddings.npy --group-by ethnicity --fmr 1e-3,1e-4 --out results/

        matchaudit audit --comparisons scores.csv --identity-cols enrol_id,probe_id --group-by gender --out results/

        matchaudit audit --format voxceleb --trials veri_test2.txt --scores scores.txt --metadata vox1_meta.csv --group-by Gender
    """
    from matchaudit import checks
    from matchaudit.auditing.options import EquivalenceOptions, IntervalOptions, MeasureOptions, TestOptions
    from matchaudit.choices import PAIRED_SCHEMES
    from matchaudit.cli.formats import load_by_format
    from matchaudit.data import load_samples
    from matchaudit.definitions import DetScale
    from matchaudit.estimators.matching_tests import Comparisons
    from matchaudit.engine import backends

    if thresholds_from is not None:  # the file itself, so that an --out holding it is refused as an input
        from matchaudit.auditing.results_json import results_file

        thresholds_from = results_file(thresholds_from, "thresholds_from")
    read = (samples, embeddings, pairs, comparisons, trials, scores, key, impostor_scores, ids, column_ids, mask,
            metadata, claims,
            thresholds_from, speaker_of if speaker_of and Path(speaker_of).is_file() else None, *(template_log or ()))
    output_dir(out, "audit", read)
    conditions = names(condition_cols) or ()
    if conditions:
        output_dir(out, "conditions", read)
        if no_intervals:
            raise InputError("--condition-cols: the conditions' rates come with their joint bootstrap intervals; drop "
                             "--no-intervals.")
        if samples is not None:
            raise InputError("--condition-cols: trial conditions are attributes of each comparison, and all pairs of "
                             "--samples have none; give a comparison table (--comparisons) with the condition column.")
    elif condition_reference is not None:
        raise InputError("--condition-reference picks one of the --condition-cols values: give --condition-cols too.")
    from matchaudit.cli.check import audit_claims, verdicts_of, claims_level, claims_preflight

    promises = audit_claims(claims, no_intervals, out, read)
    if report is not None:
        report_file(out / "results.json", report, "--report", read, out)
    backends.check_name(backend)  # before the data load: a typo fails at once
    checks.choice(det_scale, DetScale, "det_scale")
    checks.choice(tests_versus, Comparisons, "test_comparisons")
    checks.integer(small_group_identities, "small_group_identities")
    groups = names(group_by)
    if report is not None:  # before the audit: a typo does not cost a whole run
        from matchaudit.metrics.cross_groups import heatmap_options

        heatmap_options(groups or (), heatmap_order, heatmap_aggregate)
    if out_of_core and (samples is not None or fmt != "tidy"):
        raise InputError("--out-of-core reads a Parquet comparison table (--comparisons, --format tidy); drop it.")
    checks.choice(duplicates, DUPLICATE_POLICIES, "duplicates")
    if report is None and (heatmap_order is not None or heatmap_aggregate is not None):  # ignored silently before
        raise InputError("--heatmap-order and --heatmap-aggregate shape the report's heat map: give --report too, "
                         "or `matchaudit report` later with them.")
    if no_intervals and tests is False and equivalence is None and level != 0.95:
        raise InputError("--level sets the intervals' and the tests' level; with --no-intervals and no --tests or "
                         "--equivalence it would be ignored: drop it.")
    if no_intervals and equivalence is None and n_resamples != 1000:
        raise InputError("--n-resamples counts the intervals' (and --equivalence's) bootstrap replicates; with "
                         "--no-intervals it would be ignored: drop it (the tests' relabellings are --test-resamples).")
    if pairs is not None and samples is None:  # it was ignored silently: every row of the table was audited
        raise InputError("--pairs picks sample pairs of --samples (with --embeddings); a comparison table lists its "
                         "comparisons already: filter its rows instead.")
    if samples is not None and duplicates != "keep-both":
        raise InputError("--duplicates applies to scored comparisons (--comparisons or a score file); --pairs "
                         "of --samples must list each sample pair once.")
    if samples is not None and (fta_policy != "refuse" or return_code_col is not None):
        raise InputError("--fta-policy and --return-code-col apply to scored comparisons (--comparisons or a score "
                         "file); samples with embeddings have no failed comparisons: drop samples whose embedding "
                         "failed before the audit and report them as failures to enrol.")
    if return_code_col is not None and fmt != "tidy":
        raise InputError(f"--return-code-col names a column of --comparisons (--format tidy), not of --format {fmt}.")
    if samples is not None:
        if fmt != "tidy" or comparisons is not None or template_log:
            raise InputError("--samples goes alone (with --embeddings or --embedding-col); drop --comparisons/--format.")
        data = load_samples(samples, embeddings, id_col=id_col, identity_col=identity_col, embedding_col=embedding_col,
                            group_by=groups, metric=metric.value, pairs_path=pairs)
    else:
        if fmt == "tidy" and comparisons is None:
            raise InputError("give either --samples (with --embeddings or --embedding-col) or --comparisons, "
                             "or another --format with its files.")
        data = load_by_format(fmt, comparisons=comparisons, scores=scores, trials=trials,
                              embeddings=embeddings if fmt == "identity-embeddings" else None, key=key,
                              impostor_scores=impostor_scores, ids=ids,
                              column_ids=column_ids, mask=mask, metadata=metadata, metadata_key=metadata_key,
                              speaker_of=speaker_of, group_by=groups, distance=distance, fta_policy=fta_policy,
                              duplicates=duplicates, template_logs=tuple(template_log or ()), condition_cols=conditions,
                              metric=metric.value, identity_col=identity_col, id_col=id_col,
                              embedding_cols=names(embedding_col),
                              tidy=dict(score_col=score_col, sample_cols=_pair(sample_cols, "--sample-cols"),
                                        identity_cols=_pair(identity_cols, "--identity-cols"), label_col=label_col,
                                        out_of_core=out_of_core, return_code_col=return_code_col))
    if data.out_of_core and not (quiet or as_json):
        console.print(f"Reading the comparison table out of core ({data.n_comparisons():,} rows, one Parquet row "
                      "group at a time)" + (": it would take over a quarter of memory." if out_of_core is None else "."))
    if tests and data.out_of_core:
        data.table("--tests (the group permutation tests)")
    if conditions:  # before the audit: a condition the analysis refuses does not cost a whole run
        from matchaudit.auditing.conditions import condition_codes

        condition_codes(data, conditions, condition_reference)
    carried = _carried(floats(threshold, "--threshold"), floats(threshold_fmr, "--threshold-fmr"), thresholds_from,
                       rule.value)
    measures = MeasureOptions(weightings=names(weighting), dcf_p_target=dcf_p_target, dcf_c_miss=dcf_c_miss,
                              dcf_c_fa=dcf_c_fa, eer=eer, fmr_threshold=fmr_threshold, dcf=dcf_points(dcf), llr=llr,
                              calibration=not no_calibration, zero_policy=zero_policy.value,
                              exclude_small_groups=exclude_small_groups, small_group_identities=small_group_identities)
    if no_intervals:  # interval options that will not be used were ignored silently
        unused = [name for name, given in (("ci_method", ci_method is not None), ("one_sided", one_sided),
                                           ("band", band != "simultaneous"), ("memory_gb", memory is not None),
                                           ("spill_dir", spill_dir is not None)) if given]
        if unused:
            raise InputError("the intervals are skipped (--no-intervals), so this interval option would be ignored: "
                             "drop it or compute the intervals.", param=unused[0])
    if not tests:  # test options without --tests were ignored silently
        unused = [name for name, given in (("test_resamples", test_resamples != 999),
                                           ("test_comparisons", tests_versus != "pairs")) if given]
        if unused:
            raise InputError("this option of the group tests would be ignored without --tests: drop it or add "
                             "--tests.", param=unused[0])
    interval_level, replicates = (level, n_resamples) if promises is None else claims_level(
        promises, data, level, n_resamples, quiet or as_json)
    intervals = False if no_intervals else IntervalOptions(
        method=ci_method, level=interval_level, n_resamples=replicates, seed=ci_seed, one_sided=one_sided, band=band,
        memory_gb=memory, spill_dir=None if spill_dir is None else str(spill_dir))
    alpha = round(1 - checks.probability(level, "level"), 12)  # the tests' and the equivalence tests' (--level)
    test_options = TestOptions(n_resamples=test_resamples, seed=ci_seed, alpha=alpha, comparisons=tests_versus) \
        if tests else False
    equivalence_options = None
    if equivalence is not None:
        if alpha >= 0.5:
            raise InputError(f"level {level!r}: equivalence tests run at alpha = 1 - level, which must be below 0.5; "
                             "give a level above 0.5.", param="level")
        paired = next((m for m in (names(ci_method) if not no_intervals else ()) if m in PAIRED_SCHEMES),
                      "double-or-nothing")
        equivalence_options = EquivalenceOptions(margin(equivalence), scale=equivalence_scale, n_resamples=n_resamples,
                                                 alpha=alpha, seed=ci_seed, method=paired)
    if promises is not None:
        claims_preflight(promises, data, floats(fmr, "--fmr"), floats(threshold, "--threshold"),
                          floats(fnmr, "--fnmr"), names(weighting), one_sided)
    # computed before anything is written, so that a refusal (or an interrupt) leaves --out as it was; the sets
    # are then written one after the other
    by_condition = _conditions(data, conditions, condition_reference, floats(fmr, "--fmr"), ci_method, level,
                               n_resamples, ci_seed, rule.value, quiet or as_json) if conditions else None
    verdicts: list = []  # the claims' verdicts, made on the audit before it is saved
    engine = None if no_intervals else backends.make_backend(backend, scheduler=scheduler, workers=workers)
    try:
        result = run_audit(data, out, _command(), quiet or as_json, det_scale=det_scale, figures=not no_figures,
                  fmr=floats(fmr, "--fmr"), thresholds=floats(threshold, "--threshold"), fnmr=floats(fnmr, "--fnmr"),
                  rule=rule.value, threshold_impostors=threshold_impostors, measures=measures, intervals=intervals,
                  tests=test_options, equivalence=equivalence_options, backend=engine,
                  carried=_carried_options(carried, thresholds_from, threshold_fmr),
                  before_save=None if promises is None else lambda a: verdicts.append(verdicts_of(promises, a)))
    finally:
        if engine is not None:
            engine.close()
    if by_condition is not None:
        _write_conditions(by_condition, out, read, conditions, quiet or as_json)
    if verdicts:
        verdicts[0].save(out, read)
    if report is not None:
        from matchaudit.report.html import write_report  # here: it draws figures, so it imports matplotlib

        write_report(out / "results.json", report, heatmap_order=heatmap_order, heatmap_aggregate=heatmap_aggregate,
                     audit=result)
    if as_json:
        typer.echo((out / "results.json").read_text())
    if verdicts:
        if not (quiet or as_json):
            from matchaudit.cli.check import show

            show(verdicts[0])
        raise typer.Exit(verdicts[0].exit_code)


def _conditions(data: MatchData, cols: tuple[str, ...], reference: str | None, fmr: tuple[float, ...],
                ci_method: str | None, level: float, n_resamples: int, seed: int, rule: str, quiet: bool) -> Any:
    """``ma.audit_conditions`` at the audit's FMR targets (the first paired bootstrap of --ci-method, else
    double-or-nothing)."""
    from matchaudit.auditing.conditions import audit_conditions
    from matchaudit.choices import PAIRED_SCHEMES

    method = next((m for m in names(ci_method) or () if m in PAIRED_SCHEMES), "double-or-nothing")
    return audit_conditions(data, cols, fmr, reference=reference, method=method, n_resamples=n_resamples,
                            seed=seed, level=level, rule=rule, progress=not quiet)


def _write_conditions(result: Any, out: Path, read: tuple, cols: tuple[str, ...], quiet: bool) -> None:
    """The conditions written to conditions.json and conditions.csv, and its rates and tests printed."""
    import json

    from matchaudit.outputs import staged

    method = result.method
    with staged(out, "conditions", inputs=read) as tmp:
        (tmp / "conditions.json").write_text(json.dumps(result.to_dict(), indent=1, allow_nan=False) + "\n",
                                             encoding="utf-8")
        result.to_frame().to_csv(tmp / "conditions.csv", index=False)
    if quiet:
        return
    table = Table(title=f"Trial conditions ({' x '.join(cols)}) at the audit's thresholds; {method} intervals")
    for col in ("FMR target", "kind", "metric", "condition", "group", "estimate", "interval", "p"):
        table.add_column(col, **(NAME_COLUMN if col in ("condition", "group") else {}))
    for r in result.records:
        if r["kind"] == "rate" and r["group"] != "all":
            continue  # the cells are in conditions.csv
        cond = r["condition"] + (f" - {r['condition_ref']}" if r.get("condition_ref") else "")
        group = r["group"] + (f" - {r['group_ref']}" if r.get("group_ref") else "")
        scale = "rate" if r["kind"] in ("rate", "equalised") else "points"
        table.add_row(f"{r['fmr_target']:g}", r["kind"], r["metric"].upper(), cond, group,
                      fmt(r["estimate"], scale, sign=scale == "points"), interval(r["low"], r["high"], scale),
                      "" if r.get("p_value") is None else fmt(r["p_value"], "p"))
    console.print(table)
    for t in result.tests:
        verdict = (f"no test: {t['note']}" if t.get("note") else
                   f"chi2 = {t['statistic']:.3g} on {t['df']} df, p = {t['p_value']:.3g}")
        console.print(f"Wald test, {t['metric'].upper()} at FMR {t['fmr_target']:g}: {t['hypothesis']}: {verdict}",
                      highlight=False)
    console.print(f"Conditions written to [bold]{escape(str(out))}[/] (conditions.csv, conditions.json).")


def dev_thresholds(results: Path, rule: str | None = None) -> tuple[tuple[float, float], ...]:
    """``(threshold, FMR target)`` of a development set's audit (overall group, first weighting); refused when it
    set them under another decision ``rule`` than this audit's."""
    from matchaudit.auditing.results_json import load_results, results_file

    doc = load_results(results_file(results), "thresholds_from")  # checked against the schema
    if rule is not None and doc["config"]["rule"] != rule:
        raise InputError(f"--thresholds-from {results}: its thresholds accept iff score {doc['config']['rule']} "
                         f"threshold, this audit iff score {rule} threshold (--rule): the same number would accept "
                         "other comparisons; give the development audit's --rule.")
    points, first = doc["operating_points"], doc["config"]["weightings"][0]
    out = tuple((float(p["threshold"]), float(p["target"])) for p in points
                if p["kind"] == "fmr_target" and p["group"] == "all" and p["weighting"] == first)
    if not out:
        raise InputError(f"--thresholds-from {results}: it holds no thresholds at FMR targets (an audit run with "
                         "--threshold or --fnmr only); re-run the development audit with --fmr.")
    return out


def _carried(thresholds: tuple[float, ...], targets: tuple[float, ...], results: Path | None, rule: str
             ) -> tuple[tuple[float, float], ...]:
    """The carried ``(threshold, target)`` pairs: the development audit's (set under the same ``rule``), then the
    --threshold values with --threshold-fmr (one target for all, or one each)."""
    pairs = dev_thresholds(results, rule) if results else ()
    if targets:
        if not thresholds or len(targets) not in (1, len(thresholds)):
            raise InputError(f"{','.join(map(str, targets))}: give the FMR target the --threshold "
                             f"values were set for, one for all or one per threshold ({len(thresholds)} given).",
                             param="targets")
        pairs += tuple(zip(thresholds, targets * len(thresholds) if len(targets) == 1 else targets))
    return pairs


def _carried_options(pairs: tuple[tuple[float, float], ...], results: Path | None, threshold_fmr: str) -> Any:
    """The library's carried thresholds of ``pairs`` (None without any), their source named."""
    if not pairs:
        return None
    from matchaudit.auditing.options import CarriedThresholds

    source = ", ".join([str(results)] * bool(results) + ["--threshold"] * bool(threshold_fmr))
    return CarriedThresholds(*zip(*pairs), source=source)


def _print_portability(result: Audit) -> None:
    """The portability table: per carried threshold and group, FMR against its target and the group's own threshold."""
    rows = result.portability_records or []
    if not rows:
        return
    table = Table(title=f"Carried thresholds on this population (pooled; accept iff score {result.config.rule} "
                        "threshold; a group's FMR over its same-group impostors)")
    for col in ("threshold (set for FMR)", "group", "FMR (k/n)", "FMR interval", "FMR / target", "FNMR (k/n)",
                "FNMR interval", "own threshold [interval]"):
        table.add_column(col, **(NAME_COLUMN if col == "group" else {}))
    for r in rows:
        own = (f"{threshold_text(r['required_threshold'])} {interval(r['required_low'], r['required_high'], digits=4)}"
               if r["required_threshold"] == r["required_threshold"] else "unresolved (see notes)")
        mark = {"above target": " [red]above[/]", "at or below target": " [green]holds[/]"}.get(r["status"], "")
        table.add_row(f"{threshold_text(r['threshold'])} ({fmt(r['target'], 'rate')})", r["group"],
                      with_counts(r["fmr"], r["fmr_errors"], r["fmr_comparisons"]),
                      interval(r["fmr_low"], r["fmr_high"], "rate"), f"{fmt(r['fmr_ratio'], digits=3)}x{mark}",
                      with_counts(r["fnmr"], r["fnmr_errors"], r["fnmr_comparisons"]),
                      interval(r["fnmr_low"], r["fnmr_high"], "rate"), own + (" †" if r["indicative"] else ""))
    console.print(table)
    for r in rows:
        if r["note"] and r["required_threshold"] != r["required_threshold"]:
            err_console.print(f"[yellow]Note:[/] {escape(r['group'])} at FMR {r['target']:g}: {escape(r['note'])}",
                              highlight=False, soft_wrap=True)


def _pair(text: str, flag: str) -> tuple[str, str] | None:
    parts = names(text)
    if not parts:
        return None
    if len(parts) != 2:
        raise InputError(f"{flag} {text!r}: give exactly two column names separated by a comma.")
    return parts[0], parts[1]


def _command() -> str:
    return "matchaudit " + " ".join(shlex.quote(a) for a in sys.argv[1:])


@app.command("demo")
@user_errors
def demo(
    out: Path = typer.Option(Path("matchaudit-demo"), "--out", parser=folder_path, help="Output directory."),
    seed: int = typer.Option(0, "--seed", help="Seed of the synthetic data set."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
    test_resamples: int = typer.Option(199, "--test-resamples", help="Relabellings of the group tests."),
) -> None:
    """Simulate the embedded synthetic data set (vMF embeddings, three groups with known gaps) and audit it.

    Writes the data to OUT/data/ (the same files a user would give: samples.parquet and embeddings.npy, a second
    model's embeddings_b.npy, a scored trial list comparisons.csv, the same trials as a NIST FRTE match log with
    failures, match_log.txt, with templates.txt and subjects.csv; the README's examples read them), the audit with
    default intervals, the group tests of FNMR@FMR (--test-resamples relabellings) and FMR at FNMR 1e-2 to OUT/, and
    the HTML report to OUT/report.html.

    Example:

        matchaudit demo --out matchaudit-demo
    """
    from matchaudit.auditing.options import IntervalOptions, TestOptions
    from matchaudit.data import load_samples
    from matchaudit.outputs import check, check_report
    from matchaudit.report.html import write_report
    from matchaudit.simulation import write_demo_data

    output_dir(out, "audit")
    check(out / "data", "demo-data")
    check_report(out / "results.json", None)
    files = write_demo_data(out / "data", seed=seed)
    data = load_samples(files.samples, files.embeddings, group_by=("group",))
    result = run_audit(data, out, f"matchaudit demo --out {out} --seed {seed} --test-resamples {test_resamples}",
                       quiet, fmr=(1e-2, 1e-3, 1e-4), fnmr=(1e-2,), intervals=IntervalOptions(seed=seed),
                       tests=TestOptions(n_resamples=test_resamples, seed=seed))
    report = write_report(out / "results.json", audit=result)
    if not quiet:
        console.print(f"Report: [bold]{escape(str(report))}[/]")


@app.command("schema")
def print_schema(quiet: bool = typer.Option(False, "--quiet", help="Accepted as every command takes it (the schema is "
                                                                    "the output, printed all the same).")) -> None:
    """Print the JSON Schema that every results.json satisfies.

    Example:

        matchaudit schema > results.schema.json
    """
    from matchaudit.encoding import schema

    typer.echo(json.dumps(schema(), indent=2))

