from pathlib import Path

from streams.app.settings import Settings

README = (Path(__file__).parents[2] / "README.md").read_text()


def test_every_setting_is_documented_in_readme():
    missing = [n.upper() for n in Settings.model_fields if f"`{n.upper()}`" not in README]
    assert not missing, f"settings missing from README: {missing}"
