"""Templates for new files: the store's own `.templates/<name>` first (people may edit them),
then the ones packaged with memctl."""

from __future__ import annotations

from pathlib import Path

STORE_TEMPLATE_DIR = ".templates"
PLACEHOLDER = "{{text}}"


def packaged_template_dir() -> Path:
    package = Path(__file__).resolve().parent.parent  # memctl/
    installed = package / "templates"  # inside a wheel (pyproject.toml force-includes it)
    if installed.is_dir():
        return installed
    return package.parent / "templates"  # a source checkout or an editable install


def packaged_templates() -> list[Path]:
    return sorted(p for p in packaged_template_dir().iterdir() if p.is_file() and p.suffix == ".md")


def load_template(store_root: Path | None, name: str) -> str:
    """The text of template `name` (such as `decision.md` or `MEMORY.md`)."""
    if store_root is not None:
        own = Path(store_root) / STORE_TEMPLATE_DIR / name
        try:
            return own.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
            pass
    return (packaged_template_dir() / name).read_text(encoding="utf-8")


def fill(template: str, **values: str) -> str:
    """Replace `{{name}}` placeholders; plain replacement so braces in text are safe."""
    for key, value in values.items():
        template = template.replace("{{" + key + "}}", value)
    return template
