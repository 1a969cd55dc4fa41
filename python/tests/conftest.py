"""Devices for the binding's tests: NULL always; the default OpenCL device (PoCL here) when there
is one (ENCORE_REQUIRE_CL=1, as CI sets, makes its absence a failure instead of a skip)."""
import os

import pytest

import encore


def open_cl():
    try:
        return encore.Device.open()
    except encore.DeviceError:
        if os.environ.get("ENCORE_REQUIRE_CL") == "1":
            raise
        return None


@pytest.fixture(scope="session")
def null():
    return encore.Device.open("NULL")


@pytest.fixture(scope="session")
def cl():
    d = open_cl()
    if d is None or d.is_null:
        pytest.skip("no OpenCL device")
    return d


@pytest.fixture(params=["NULL", "CL"], scope="session")
def dev(request):
    if request.param == "NULL":
        return encore.Device.open("NULL")
    return request.getfixturevalue("cl")
