"""chat's quick look at the model server (services/model/endpoint.py) against real servers on
127.0.0.1: a redirect to another origin never carries the API key there."""

from gitsessions.services.model.endpoint import probe
from gitsessions.services.settings.config import ModelSettings, resolve_model_settings
from tests.hostile_servers import recorder, redirector


def settings_for(base_url: str) -> ModelSettings:
    return resolve_model_settings({"base_url": base_url}, {"OPENAI_API_KEY": "sk-probe"}, {})


def test_the_probe_sends_no_key_to_another_origin() -> None:
    with recorder() as elsewhere, redirector(307, elsewhere.base) as here:
        found = probe(settings_for(f"{here.base}/v1"))
        assert here.seen[0].headers.get("authorization") == "Bearer sk-probe"
        [seen] = elsewhere.seen
    assert (seen.method, seen.path) == ("GET", "/v1/models")
    assert "authorization" not in seen.headers
    assert found.unreachable is None


def test_the_probe_keeps_the_key_on_its_own_origin() -> None:
    with redirector(308, same=True) as here:
        found = probe(settings_for(f"{here.base}/old"))
        listing = [s for s in here.seen if s.path.endswith("/models")]
        assert [s.headers.get("authorization") for s in listing] == ["Bearer sk-probe"] * 2
        # then the context it holds, asked of the same origin (services/model/context_window.py)
        asked = sorted(s.path for s in here.seen if s not in listing)
        assert asked == ["/old/api/show", "/old/props"]  # a redirect: no answer
    assert found.models == ("m1",)
