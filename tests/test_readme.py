"""The README's and the docs' code runs, and shown output is what the commands print.

Every fenced block of ``README.md`` and ``docs/**/*.md`` is checked by its language:

* ``python``: runs from the checkout and exits 0 (examples assert what they show);
* ``console``: the first line is ``$ command``, the rest exactly what it prints
  (with ``COLUMNS=100``, the width the ``--help`` texts are shown at);
* ``sh``: runs in ``/bin/sh -e`` from the checkout, with ``dra-metadata`` and
  ``python`` on ``PATH`` running this checkout, ``DRA_METADATA_ROOT`` at the sample
  tree, and ``/shared`` (a volume an init container shares) in a temporary directory;
* any other language is shown, not run (``text``, ``yaml``, ``json``, ``pycon``, ...).

A ``python``, ``console`` or ``sh`` block that must not run (it installs packages,
or runs for ever) has ``<!-- not-run: why -->`` on the line above it.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLE_ROOT

README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = REPO / "docs"
DOCUMENTS = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
FENCE = re.compile(
    r"^(?:<!-- not-run(?P<marked>:?)(?P<reason>[^\n]*?) -->\n)?"  # an optional marker line
    r"```(?P<lang>\S*)\n(?P<body>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
RUN = ("python", "console", "sh")
SHOWN = ("text", "yaml", "json", "pycon", "toml", "go", "dockerfile")
#: The terminal width the docs' --help texts are shown at.
COLUMNS = "100"


@dataclass(frozen=True)
class Block:
    """One fenced code block of a document."""

    document: Path
    line: int
    language: str
    body: str
    not_run: str | None  # the reason given in a <!-- not-run: ... --> marker

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(REPO)}:{self.line}"


def document_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        fence = match.start("lang") - 3
        marked = match.group("marked") is not None
        found.append(
            Block(
                path,
                text.count("\n", 0, fence) + 1,
                match.group("lang"),
                match.group("body"),
                match.group("reason").strip() if marked else None,
            )
        )
    return found


ALL_BLOCKS = [block for path in DOCUMENTS for block in document_blocks(path)]


def blocks(language: str) -> list[Block]:
    return [b for b in ALL_BLOCKS if b.language == language and b.not_run is None]


def where(block: Block) -> str:
    return block.where


def text_of(path: str) -> str:
    return (REPO / path).read_text(encoding="utf-8")


def test_every_block_is_run_or_shown_on_purpose() -> None:
    """A block has a known language; only runnable ones are marked, and say why."""
    assert len(ALL_BLOCKS) > 40, "the fence pattern finds the blocks"
    for block in ALL_BLOCKS:
        assert block.language in RUN + SHOWN, f"{block.where}: language {block.language!r}"
        if block.not_run is not None:
            assert block.language in RUN, f"{block.where}: only runnable blocks are marked"
            assert block.not_run, f"{block.where}: say why it is not run"


def test_quickstart_is_two_commands_and_ci_runs_the_second() -> None:
    """Quickstart holds exactly two commands; .ci/run runs the second one verbatim."""
    quickstart = README.split("## Quickstart", 1)[1].split("##", 1)[0]
    commands = FENCE.findall(quickstart)[0][3].strip().splitlines()
    assert len(commands) == 2
    assert commands[0].startswith("pip install . && dra-metadata show ")
    assert commands[1] == "pip install '.[test]' && python -m pytest"
    assert commands[1] in (REPO / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("block", blocks("python"), ids=where)
def test_python_blocks_run(block: Block) -> None:
    """Every python block runs without error from the checkout."""
    done = subprocess.run(
        [sys.executable, "-c", block.body], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr


def console_examples() -> list[tuple[Block, str, str]]:
    found = []
    for block in blocks("console"):
        first, _, output = block.body.partition("\n")
        found.append((block, first, output))
    return found


def console_params() -> list[object]:
    return [pytest.param(*example, id=example[0].where) for example in console_examples()]


def test_console_blocks_show_a_command_and_its_output() -> None:
    """A console block starts with ``$ command``; no second prompt hides in its output."""
    for block, first, output in console_examples():
        assert first.startswith("$ "), f"{block.where}: no command"
        assert "\n$ " not in f"\n{output}", f"{block.where}: one command per block"


@pytest.mark.parametrize(("block", "command", "output"), console_params())
def test_console_examples_print_what_is_shown(
    block: Block, command: str, output: str, tmp_path: Path
) -> None:
    """Each `$ command` shown with its output prints exactly that output."""
    words = shlex.split(command.removeprefix("$ "))
    # The checkout's package, whatever copy is installed.
    env = dict(os.environ, COLUMNS=COLUMNS, PYTHONPATH=str(REPO))
    while words and "=" in words[0]:
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    if words[0] == "dra-metadata":
        words = [sys.executable, "-m", "dra_metadata", *words[1:]]
    elif words[0] == "python":
        words[0] = sys.executable
    cwd = REPO
    if "bad-metadata.json" in words:
        import dra_metadata as dm

        (tmp_path / "bad-metadata.json").write_bytes(
            dm.encode(dm.DeviceMetadata(pod_claim_name="BAD"))
        )
        cwd = tmp_path
    done = subprocess.run(words, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)
    hint = "; run python docs/_ext/cli_help.py" if command.endswith(" --help") else ""
    assert done.stdout == output, done.stderr + hint


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A directory with a ``dra-metadata`` and a ``python`` that run this checkout."""
    directory = tmp_path / "bin"
    directory.mkdir()
    python = shlex.quote(sys.executable)
    for name, command in (("dra-metadata", f"{python} -m dra_metadata"), ("python", python)):
        wrapper = directory / name
        wrapper.write_text(
            f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO))} exec {command} "$@"\n',
            encoding="utf-8",
        )
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return directory


@pytest.mark.parametrize("block", blocks("sh"), ids=where)
def test_sh_blocks_run(block: Block, bin_dir: Path, tmp_path: Path) -> None:
    """Every sh block runs in a real /bin/sh against the sample tree and exits 0."""
    shared = tmp_path / "shared"
    shared.mkdir()
    script = re.sub(r"(?<![\w/.-])/shared(?=/)", str(shared), block.body)
    done = subprocess.run(
        ["/bin/sh", "-ec", script],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(
            os.environ,
            PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            DRA_METADATA_ROOT=str(SAMPLE_ROOT),
        ),
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_readme_init_container_recipe_sources_a_file() -> None:
    """The README's recipe writes `env` to a file and sources it, so a failing `env` stops."""
    recipe = README.split("## In an init container", 1)[1].split("\n## ", 1)[0]
    assert "dra-metadata env > /shared/dra.env && . /shared/dra.env" in recipe
    assert "eval" not in recipe


def test_readme_links_resolve() -> None:
    """Every relative link of the README names a file of the checkout."""
    links = re.findall(r"\]\((?!https?:|#)([^)#]+)(?:#[^)]*)?\)", README)
    assert links
    for link in links:
        assert (REPO / link).exists(), link


def test_readme_links_every_docs_page() -> None:
    """The README is the door: it links each guide page of the docs."""
    for page in sorted(DOCS.glob("*.md")):
        assert f"(docs/{page.name})" in README, page.name


def test_api_reference_covers_the_public_names() -> None:
    """Every name of ``dra_metadata.__all__`` and of the testing kit has an API entry."""
    import dra_metadata as dm
    from dra_metadata import testing

    api = "".join(path.read_text(encoding="utf-8") for path in sorted((DOCS / "api").glob("*.md")))
    entries = re.findall(r"^::: (\S+)$", api, re.MULTILINE)
    assert len(entries) == len(set(entries)), "each name once"
    expected = {f"dra_metadata.{name}" for name in dm.__all__ if name != "__version__"}
    expected |= {f"dra_metadata.testing.{name}" for name in testing.__all__}
    expected.add("dra_metadata.pytest_plugin")
    missing = sorted(expected - set(entries))
    assert not missing, f"add `::: NAME` lines to a page of docs/api/ for {missing}"
    assert not set(entries) - expected, "the API pages document only public names"


def test_cli_page_lists_the_exit_codes() -> None:
    """docs/cli.md's exit-code table has one row per code the command line uses."""
    from dra_metadata import _cli as _common

    codes = sorted({v for k, v in vars(_common).items() if k.startswith("EXIT_")})
    rows = re.findall(r"^\| (\d+) \| .* \|$", text_of("docs/cli.md"), re.MULTILINE)
    assert [int(code) for code in rows] == codes


def test_cli_page_shows_every_help_text() -> None:
    """docs/cli.md shows ``--help`` of the program and of every command (run above)."""
    from dra_metadata._cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.dest == "command"]
    assert commands.choices is not None
    shown = {
        command
        for block, command, _ in console_examples()
        if block.document == DOCS / "cli.md" and command.endswith(" --help")
    }
    expected = {"$ dra-metadata --help"} | {f"$ dra-metadata {c} --help" for c in commands.choices}
    assert shown == expected
