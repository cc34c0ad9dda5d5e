"""The product does not import its test doubles: hermes_pipeline.testing is for tests and benchmarks only."""
import subprocess
import sys

IMPORT_ALL = """
import importlib, pathlib, sys
import hermes_pipeline
root = pathlib.Path(hermes_pipeline.__file__).parent
for path in sorted(root.rglob("*.py")):
    name = ".".join(("hermes_pipeline", *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
    if not name.startswith(("hermes_pipeline.testing", "hermes_pipeline.__main__")):
        importlib.import_module(name)
print(sorted(name for name in sys.modules if name.startswith("hermes_pipeline.testing")))
"""


def test_no_product_module_imports_the_testing_package():
    result = subprocess.run([sys.executable, "-c", IMPORT_ALL], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
