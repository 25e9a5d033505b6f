# The Python tests run against the installed package (pip install .; tools/test.sh does it).
import pytest


@pytest.fixture(scope="session")
def runtime():
    import attnrt

    return attnrt.Runtime(None, ["attnrt.device=cpu"])
