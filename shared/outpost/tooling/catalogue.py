"""`python -m outpost.tooling.catalogue`: every file that lists the checks, written from the registry.

A check is its module (`CheckSpec`, docstring, `Params`), registry row and tests; everything else naming checks is
written from those so it cannot disagree (docs/adding-a-check.md): docs/checks.md's generated regions (tables,
the dependency graph, and per check its module docstring and parameters), functions/<check>/main.py (and the
inhibitor's), missing entries in the example
environments (existing ones are never rewritten), tests/unit/golden/rbac_local.yaml, and docs/runbooks.md (every
failure class of every check and of a run that could not observe). `--check` writes
nothing and exits 1 naming each stale file, as tests/unit/test_generated.py does in memory.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from outpost import registry, runbook
from outpost.check import CheckSpec
from outpost.deploy import NOTIFIER
from outpost.errors import ConfigError
from outpost.holdback.decision import INHIBITOR
from outpost.settings import load_settings
from outpost.tooling import rbac
from outpost.tooling.packaging.platforms import entry_module

COMMAND: Final = "python -m outpost.tooling.catalogue"
ROOT: Final = Path(__file__).resolve().parents[3]
"""The repository this module was loaded from (shared/outpost/tooling/ -> the root)."""
CATALOGUE: Final = "docs/checks.md"
RBAC_GOLDEN: Final = "tests/unit/golden/rbac_local.yaml"
RUNBOOKS: Final = "docs/runbooks.md"
ENVIRONMENTS: Final = "infra/environments"
FUNCTIONS: Final = "functions"

ENTRY_PATTERNS: Final[dict[str, tuple[str, ...]]] = {
    "local": ("heartbeat: env:OUTPOST_HEARTBEAT_{constant}",),
    "dev": ("heartbeat: ssm:/outpost/dev/heartbeat/{name}", 'monitor_id: "dev-{name}"'),
    "staging": ("heartbeat: secretsmanager:outpost/staging/heartbeats#{name}", 'monitor_id: "staging-{name}"'),
    "prod": ("heartbeat: ssm:/outpost/prod/heartbeat/{name}", 'monitor_id: "prod-{name}"'),
    "gcp-dev": (
        "heartbeat: gcpsm:projects/outpost-example/secrets/outpost-gcp-dev-heartbeat-{name}",
        'monitor_id: "gcp-dev-{name}"',
    ),
}
"""The lines of a new check's entry in each example environment, written as the entries already there are (`{name}`:
the check's name; `{constant}`: the same as an environment variable's). tests/unit/test_generated.py holds every
existing entry to its pattern, so a generated entry looks like its neighbours."""

_ENTRY_MODULE: Final = '''"""{title}

Importing this module is the cold start: the environment's settings (`$OUTPOST_CONFIG`) are loaded and
validated once, and a bad configuration raises here with every bad field path.
"""

from outpost.runtime.aws_lambda import make_handler
from outpost.runtime.gcf import make_target

CHECK = "{name}"

handler = make_handler(CHECK)
http = make_target(CHECK)
'''
_INHIBITOR_ENTRY_MODULE: Final = '''\
"""Entry module of the inhibitor function: `handler` for AWS Lambda, `http` for Cloud Functions.

Importing this module is the cold start: the environment's settings (`$OUTPOST_CONFIG`) are loaded and
validated once, hold-back must be on, and the Vigilmon API key is resolved: this function alone holds it.
"""

from outpost.runtime.inhibitor import make_inhibitor_handler, make_inhibitor_target

handler = make_inhibitor_handler()
http = make_inhibitor_target()
'''
"""The inhibitor's entry module (`outpost.holdback`): no check's, but written and kept like theirs."""
_NOTIFIER_ENTRY_MODULE: Final = '''\
"""Entry module of the notifier function: `handler` for AWS Lambda, `http` for Cloud Functions (a CloudEvent
function, registered as `notifier`).

Importing this module is the cold start: the environment's settings (`$OUTPOST_CONFIG`) are loaded and
validated once, messages must be on, and the messages topic (`$OUTPOST_MESSAGES_TOPIC`) must be set.
"""

from outpost.runtime.notifier import make_notifier_handler, make_notifier_target

handler = make_notifier_handler()
http = make_notifier_target()
'''
"""The notifier's entry module (`outpost.notify`), written and kept like the inhibitor's."""
_LINE_LENGTH: Final = 120
_TOP_LEVEL_KEY: Final = re.compile(r"^[^\s#]")
_CHECK_ENTRY: Final = re.compile(r"^  ([a-z0-9][a-z0-9-]*):\s*(#.*)?$")


class CatalogueError(Exception):
    """A file or a check is not shaped as the generator needs (a marker, a block, a docstring or a description)."""


def marker(region: str) -> tuple[str, str]:
    """The lines that open and close generated `region` in docs/checks.md."""
    return (
        f"<!-- generated {region}: `{COMMAND}` writes this from the checks; edit them, not this -->",
        f"<!-- end of generated {region} -->",
    )


def _cell(text: str) -> str:
    """One line, and a `|` that cannot end the table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def catalogue_table(specs: Sequence[CheckSpec[Any, Any]]) -> str:
    """The table test_contracts and readers rely on: `| `name` | system | layer | severity | what fails it |`."""
    lines = ["| name | system | layer | severity | what fails it |", "|---|---|---|---|---|"]
    lines += [f"| `{s.name}` | {s.system} | {s.layer} | {s.severity} | {_cell(s.fails_when)} |" for s in specs]
    return "\n".join(lines)


def dependencies_table(specs: Sequence[CheckSpec[Any, Any]]) -> str:
    """`| check | depends on | why |`, one row per edge of `registry.DEPENDS_ON`, and each check's dependants."""
    lines = ["| check | depends on | why | held back with it while it fails |", "|---|---|---|---|"]
    for spec in specs:
        held = ", ".join(f"`{name}`" for name in registry.dependants(spec.name)) or "none"
        edges = registry.parents(spec.name)
        if not edges:
            lines.append(f"| `{spec.name}` | nothing (a root) | | {held} |")
        for edge in edges:
            lines.append(f"| `{spec.name}` | `{edge.parent}` | {_cell(edge.reason)} | {held} |")
            held = ""  # said once, on the check's first row
    return "\n".join(lines)


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, list | tuple):  # items as a configuration writes them: what differs from their defaults
        value = [
            item.model_dump(mode="json", exclude_defaults=True) if isinstance(item, BaseModel) else item
            for item in value
        ]
    return "`" + json.dumps(to_jsonable_python(value), ensure_ascii=False).replace("|", "\\|") + "`"


def _description(spec: CheckSpec[Any, Any], name: str) -> str:
    """The field's description, or the one of the model it overrides (a default changed, the meaning kept)."""
    for model in spec.params.__mro__:
        if isinstance(model, type) and issubclass(model, BaseModel) and name in model.model_fields:
            description = model.model_fields[name].description
            if description:
                return description
    # The table is the operator's reference for the parameter: an undocumented one is refused, not left blank.
    raise CatalogueError(f"{registry.module(spec.name)}: parameter {name!r} of {spec.name} has no description")


def parameters_table(spec: CheckSpec[Any, Any]) -> str:
    lines = ["| parameter | default | meaning |", "|---|---|---|"]
    lines += [
        f"| `{name}` | {_default(field)} | {_cell(_description(spec, name))} |"
        for name, field in spec.params.model_fields.items()
    ]
    return "\n".join(lines)


def _capitalized(text: str) -> str:
    """The docstring's lead, `name: does it ...?`, as a sentence once the heading carries the name."""
    return text[:1].upper() + text[1:]


def check_section(spec: CheckSpec[Any, Any]) -> str:
    """A check's section: metadata, what fails it, its module docstring (the long form), its parameters."""
    module = registry.module(spec.name)
    source, docstring = _source_and_docstring(module)
    traits = [spec.system, spec.layer, spec.severity, f"every {spec.schedule_minutes} min by default"]
    traits += ["opt-in"] * spec.opt_in + ["writes, under its own identity"] * spec.writes
    traits += [f"needs the `{extra}` extra" for extra in spec.extras]
    parents = ", ".join(f"`{edge.parent}`" for edge in registry.parents(spec.name)) or "nothing"
    held = ", ".join(f"`{name}`" for name in registry.dependants(spec.name)) or "none"
    parts = [
        f"### `{spec.name}`",
        " · ".join(traits) + f" · [`{source}`](../shared/{source})",
        f"**What fails it:** {_cell(spec.fails_when)}",
        f"**Depends on:** {parents} · **held back while it fails:** {held} ([why](#dependencies))",
        _capitalized(docstring.removeprefix(f"{spec.name}: ")),
    ]
    body = spec.fetch.__module__
    if body != module:  # a thin module over a body shared with another check: that body says how it judges
        body_source, body_docstring = _source_and_docstring(body)
        parts += [f"The body it shares, [`{body_source}`](../shared/{body_source}):", body_docstring]
    return "\n\n".join([*parts, f"Parameters (`checks.{spec.name}.params`):", parameters_table(spec)])


def _source_and_docstring(module: str) -> tuple[str, str]:
    source = module.replace(".", "/") + ".py"
    docstring = inspect.getdoc(importlib.import_module(module))
    if not docstring:
        raise CatalogueError(f"shared/{source} has no module docstring: it is the check's section of {CATALOGUE}")
    return source, docstring


def _replace_region(text: str, region: str, content: str) -> str:
    begin, end = marker(region)
    lines = text.split("\n")
    if begin not in lines or end not in lines or lines.index(begin) > lines.index(end):
        raise CatalogueError(f"{CATALOGUE}: the generated region {region!r} lost its markers {begin!r} ... {end!r}")
    return "\n".join([*lines[: lines.index(begin) + 1], content, *lines[lines.index(end) :]])


def catalogue_text(text: str, checks: Sequence[CheckSpec[Any, Any]], jobs: Sequence[CheckSpec[Any, Any]]) -> str:
    """docs/checks.md with its generated regions rewritten; the prose around them is kept as written."""
    text = _replace_region(text, "catalogue", catalogue_table(checks))
    text = _replace_region(text, "jobs", catalogue_table(jobs))
    problems = registry.dependency_problems()
    if problems:
        raise CatalogueError(f"{registry.__name__}.DEPENDS_ON is unusable: {'; '.join(problems)}")
    text = _replace_region(text, "dependencies", dependencies_table([*checks, *jobs]))
    return _replace_region(text, "sections", "\n\n".join(check_section(spec) for spec in [*checks, *jobs]))


class _Shown(dict[str, str]):
    """Every placeholder as a reader sees it: `{namespace}` becomes `<namespace>`."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def _template(text: str) -> str:
    """A runbook template as a reader sees it: `{namespace}` becomes `<namespace>`, and a brace the command itself
    needs (written `{{`, as `Runbook.step` reads it) is shown once."""
    return text.format_map(_Shown())


def runbook_section(heading: str, entries: Sequence[runbook.Runbook]) -> str:
    """One heading and, per failure class, its title, cause, next command and where to read more."""
    parts = [heading]
    for entry in entries:
        lines = [f"#### `{entry.failure}`: {entry.title}", "", f"- **Likely cause:** {_template(entry.cause)}"]
        lines.append(f"- **Next:** `{_template(entry.command)}`")
        if entry.see:
            lines.append(f"- **See:** {_template(entry.see)}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def runbooks_text(specs: Sequence[CheckSpec[Any, Any]]) -> str:
    """docs/runbooks.md: the runner's classes first (any check can give them), then one section per check."""
    sections = [
        "# Runbooks\n\n"
        f"<!-- generated by `{COMMAND}` from each check's `runbooks` and `outpost.runbook`; edit those, not this "
        "page -->\n\n"
        "Every `failed` or `error` line a check gives carries the next step printed here, with the real names filled "
        "in (`<namespace>`, `<name>`, ...): in the CLI table under the line (`cause:`, `next:`, `see:`), as "
        "`next_steps` in `--json`, in the function's log and in its HTTP answer. Commands are run from where you "
        "deploy, with `kubectl` pointed at the cluster the check watches.",
        runbook_section("## Any check: the probe could not observe", runbook.COULD_NOT_OBSERVE),
    ]
    sections += [runbook_section(f"## `{spec.name}`", spec.runbooks) for spec in specs]
    return "\n\n".join(sections) + "\n"


def entry_module_text(name: str) -> str:
    title = f"Entry module of the `{name}` function: `handler` for AWS Lambda, `http` for Cloud Functions."
    if len(title) + 3 > _LINE_LENGTH:
        title = title.replace(": ", ":\n", 1)
    return _ENTRY_MODULE.format(title=title, name=name)


def entry_lines(environment: str, name: str) -> list[str]:
    """A new check's entry in `environment`, as lines of its `checks:` block."""
    constant = name.upper().replace("-", "_")
    return [
        f"  {name}:\n",
        *(f"    {line.format(name=name, constant=constant)}\n" for line in ENTRY_PATTERNS[environment]),
    ]


def _entries(lines: list[str], path: str) -> tuple[int, dict[str, int]]:
    """(end of the `checks:` block, the line where each entry starts)."""
    start = next((i for i, line in enumerate(lines) if line.split("#")[0].rstrip() == "checks:"), None)
    if start is None:
        raise CatalogueError(f"{path}: no top-level `checks:` block")
    end = next((i for i in range(start + 1, len(lines)) if _TOP_LEVEL_KEY.match(lines[i])), len(lines))
    found = {m[1]: i for i in range(start + 1, end) if (m := _CHECK_ENTRY.match(lines[i]))}
    return end, found


def _belongs_to_next(line: str) -> bool:
    """A blank line or a comment at entry level before an entry is that entry's, not the one above."""
    stripped = line.strip()
    return not stripped or (stripped.startswith("#") and len(line) - len(line.lstrip()) <= 2)


def environment_text(text: str, environment: str, names: Sequence[str], path: str) -> str:
    """The environment with an entry for every check of `names` it lacks, each after the nearest check before it
    in catalogue order that it has (or before its first entry); existing lines are never changed."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    parsed = yaml.safe_load(text) or {}
    listed = parsed.get("checks") if isinstance(parsed, dict) else None
    if isinstance(listed, dict) and set(listed) != set(_entries(lines, path)[1]):
        # Entries this reader cannot see would be added again on every run, never converging: refuse instead.
        raise CatalogueError(f"{path}: the entries of `checks:` are not all two-space `name:` lines")
    for position, name in enumerate(names):
        end, entries = _entries(lines, path)
        if name in entries:
            continue
        earlier = [entries[n] for n in names[:position] if n in entries]
        if earlier:
            after = max(earlier)
            at = min([i for i in entries.values() if i > after] + [end])
            while at - 1 > after and _belongs_to_next(lines[at - 1]):
                at -= 1
        else:
            at = min(entries.values(), default=end)
        lines[at:at] = entry_lines(environment, name)
    return "".join(lines)


def rbac_golden_text(local_text: str) -> str:
    """`outpost rbac --env local`'s output for the local environment as it will be written."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "local.yaml"
        path.write_text(local_text)
        try:
            settings = load_settings(path)
        except ConfigError as error:  # e.g. a new check's generated entry lacks a parameter without a default
            raise CatalogueError(
                f"{ENVIRONMENTS}/local.yaml, with the entries it would get, is invalid: {'; '.join(error.problems)}; "
                "write the check's entry there by hand with what it needs (an entry there is kept as written)"
            ) from None
        return rbac.output(settings)


def _current(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def wanted(root: Path = ROOT) -> dict[str, str | None]:
    """Every generated file, by path relative to `root`, with the text it must have (None: it must not exist)."""
    checks, jobs = registry.checks(), registry.jobs()
    catalogue = _current(root / CATALOGUE)
    if catalogue is None:
        raise CatalogueError(f"{root / CATALOGUE} is missing")
    files: dict[str, str | None] = {CATALOGUE: catalogue_text(catalogue, checks, jobs)}
    files[RUNBOOKS] = runbooks_text([*checks, *jobs])
    for spec in [*checks, *jobs]:
        files[entry_module(spec.name)] = entry_module_text(spec.name)
    files[entry_module(INHIBITOR)] = _INHIBITOR_ENTRY_MODULE
    files[entry_module(NOTIFIER)] = _NOTIFIER_ENTRY_MODULE
    for leftover in sorted((root / FUNCTIONS).glob("*/main.py")):
        files.setdefault(leftover.relative_to(root).as_posix(), None)
    names = [spec.name for spec in checks]
    for environment in ENTRY_PATTERNS:
        path = f"{ENVIRONMENTS}/{environment}.yaml"
        text = _current(root / path)
        if text is None:
            raise CatalogueError(f"{root / path} is missing")
        files[path] = environment_text(text, environment, names, path)
    local = files[f"{ENVIRONMENTS}/local.yaml"]
    assert local is not None  # written just above
    files[RBAC_GOLDEN] = rbac_golden_text(local)
    return files


def stale(root: Path = ROOT) -> list[str]:
    """The generated files whose text in `root` is not what the checks give, by relative path."""
    return [path for path, text in wanted(root).items() if _current(root / path) != text]


def write(root: Path = ROOT) -> list[str]:
    """Bring every generated file in step; the relative paths written or removed."""
    changed = []
    for path, text in wanted(root).items():
        target = root / path
        if _current(target) == text:
            continue
        if text is None:
            target.unlink()
            if not any(target.parent.iterdir()):
                target.parent.rmdir()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each file out of step")
    parser.add_argument("--root", type=Path, default=ROOT, help=f"repository root (default: {ROOT})")
    args = parser.parse_args(argv)
    try:
        if args.check:
            out_of_step = stale(args.root)
            for path in out_of_step:
                print(f"{path}: out of step with the checks", file=sys.stderr)
            if out_of_step:
                print(f"run `{COMMAND}` to write them", file=sys.stderr)
                return 1
            print("every generated file is in step with the checks")
            return 0
        changed = write(args.root)
    except CatalogueError as error:
        print(f"{COMMAND}: {error}", file=sys.stderr)
        return 1
    for path in changed:
        print(f"{'wrote' if (args.root / path).exists() else 'removed'} {path}")
    if not changed:
        print("every generated file was already in step with the checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
