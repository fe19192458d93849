"""Boundary validation of what clients send: amounts, addresses, shapes."""

import importlib
import inspect
from pathlib import Path

import pytest
from pydantic import ValidationError

import signer.wire
from signer.wire.requests import Intent, SignRequestParams

ALICE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


def test_amounts_are_integers_never_floats():
    assert Intent(chain_id=1, to=ALICE, value="10000000000000000").value == 10**16
    for bad in (0.01, 1e18, True, "1e18", "-1", "0x10", str(2**256)):
        with pytest.raises(ValidationError):
            Intent(chain_id=1, to=ALICE, value=bad)


def test_addresses_normalized_and_checksum_enforced():
    assert Intent(chain_id=1, to=ALICE).to == ALICE.lower()
    assert Intent(chain_id=1, to=ALICE.lower()).to == ALICE.lower()
    typo = ALICE[:-1] + ("c" if ALICE[-1] == "C" else "C")  # flips case of one letter: bad checksum
    with pytest.raises(ValidationError, match="checksum"):
        Intent(chain_id=1, to=typo)
    for bad in ("0x1234", "70997970C51812dc3A010C7d01b50e0d17dc79C8", 123):
        with pytest.raises(ValidationError):
            Intent(chain_id=1, to=bad)


def test_exactly_one_shape():
    with pytest.raises(ValidationError, match="exactly one"):
        Intent(chain_id=1)
    with pytest.raises(ValidationError, match="exactly one"):
        Intent(chain_id=1, to=ALICE, token_transfer={"token": ALICE, "recipient": ALICE, "amount": 1})
    with pytest.raises(ValidationError, match="no `value`"):
        Intent(chain_id=1, token_transfer={"token": ALICE, "recipient": ALICE, "amount": 1}, value=1)


def test_unknown_fields_refused():
    with pytest.raises(ValidationError):
        Intent(chain_id=1, to=ALICE, description="send to mom")  # the signer never reads descriptions


def test_idempotency_key_shape():
    SignRequestParams(idempotency_key="abc-12345", intent={"chain_id": 1, "to": ALICE})
    for bad in ("short", "x" * 129, "has space in it", "semi;colon1"):
        with pytest.raises(ValidationError):
            SignRequestParams(idempotency_key=bad, intent={"chain_id": 1, "to": ALICE})


WIRE_MODULES = sorted(
    path.stem for path in (Path(signer.wire.__file__).parent).glob("*.py") if path.stem != "__init__"
)


@pytest.mark.parametrize("name", WIRE_MODULES)
def test_each_wire_module_exports_what_it_defines_and_nothing_it_imports(name: str) -> None:
    """signer.wire's API is curated: `__all__` names every public class and function the module
    defines, and none it imported (a caller imports a name from where it is defined)."""
    module = importlib.import_module(f"signer.wire.{name}")
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "a name listed twice"
    for attr in exported:
        value = getattr(module, attr)
        if isinstance(value, type) or inspect.isfunction(value):
            assert value.__module__ == module.__name__, f"{name}.{attr} is {value.__module__}'s"
    defined = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and (isinstance(value, type) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    }
    assert defined <= exported, f"defined in {name} but not in __all__: {sorted(defined - exported)}"


def test_the_protocol_module_does_not_reach_the_request_models() -> None:
    """The params models are signer.wire.requests' alone: the protocol module neither defines nor
    resolves them (no module `__getattr__`)."""
    import signer.wire.protocol as protocol
    import signer.wire.requests as requests

    assert not hasattr(protocol, "__getattr__")
    for model in ("Intent", "SignRequestParams", "TokenTransfer"):
        assert hasattr(requests, model) and not hasattr(protocol, model)


def test_a_client_that_sends_requests_loads_no_request_model() -> None:
    """`owlia sign send` frames a request and reads a reply: it never defines the 22 request models."""
    import subprocess
    import sys

    probe = (
        "import sys; import signer.wire.blocking, signer.wire.replies; "
        "print('signer.wire.requests' in sys.modules, 'policies.kernel.addresses' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_signing_client_defines_only_the_replies_it_reads() -> None:
    """signer.wire.sign_replies holds the base and the replies of auth, sign.request / sign.status and
    policy.show; a client that only signs never defines the other reply models, and the full table
    (signer.wire.replies) holds the very same classes."""
    import subprocess
    import sys

    from signer.wire import replies, sign_replies

    for method, model in sign_replies.SIGN_REPLIES.items():
        assert replies.REPLIES[method] is model
    probe = (
        "import sys; import signer.wire.blocking; "
        "print('signer.wire.replies' in sys.modules, 'signer.wire.sign_replies' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
