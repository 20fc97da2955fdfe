import ast
import pathlib
import unittest


class Syntax(unittest.TestCase):
    def test_python39(self):
        """The package parses as Python 3.9 (the oldest it supports)."""
        root = pathlib.Path(__file__).resolve().parent.parent
        files = sorted(root.rglob("*.py"))
        self.assertGreater(len(files), 5)
        for f in files:
            ast.parse(f.read_text(encoding="utf-8"), str(f), feature_version=(3, 9))

    def test_standard_library_only(self):
        """No import outside the standard library and the package itself."""
        import sys

        root = pathlib.Path(__file__).resolve().parent.parent / "agentsidecar"
        std = set(sys.stdlib_module_names) if hasattr(sys, "stdlib_module_names") else None
        if std is None:
            self.skipTest("sys.stdlib_module_names needs Python 3.10")
        for f in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module]
                for n in names:
                    self.assertIn(n.split(".")[0], std, "%s imports %s" % (f.name, n))
