"""The one reading of an input path every source shares."""

from bashgym_inputs import find_files


def test_find_files_reads_file_folder_and_glob_the_same_way(tmp_path):
    (tmp_path / "a" / "deep").mkdir(parents=True)
    for name in ("a/x.json", "a/deep/y.json", "a/deep/z.txt", "b.json"):
        (tmp_path / name).write_text("{}")
    assert find_files(str(tmp_path / "a"), pattern="*.json") == [
        tmp_path / "a" / "deep" / "y.json",
        tmp_path / "a" / "x.json",
    ]
    assert find_files(str(tmp_path / "a"), accept=lambda p: p.suffix == ".txt") == [
        tmp_path / "a" / "deep" / "z.txt"
    ]
    assert find_files(str(tmp_path / "**" / "*.json")) == sorted(
        [tmp_path / "a" / "deep" / "y.json", tmp_path / "a" / "x.json", tmp_path / "b.json"]
    )
    assert find_files(str(tmp_path / "a" / "deep" / "z.txt"), pattern="*.json") == [
        tmp_path / "a" / "deep" / "z.txt"
    ]  # a file named explicitly is taken as named
    assert find_files(str(tmp_path / "missing")) == []
