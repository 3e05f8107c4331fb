"""``python -m matchaudit.cli.main``: the CLI without the console script."""

from matchaudit.cli import app

if __name__ == "__main__":
    app()
