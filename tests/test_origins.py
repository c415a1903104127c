"""The redirect rule the model client holds for its chat requests (services/model/origins.py),
on URLs alone: what counts as another origin and how one is shown. Where the key may go
on the model list's redirects is httpx's rule (tests/test_model_client.py,
tests/test_endpoint.py)."""

import pytest

from gitsessions.services.model.origins import (
    CrossOriginRedirect,
    origin,
    refuse_cross_origin,
)


def test_an_origin_is_scheme_host_and_port_with_the_default_filled_in() -> None:
    assert origin("HTTP://Me:s3cret@Example.COM/v1?x=1") == ("http", "example.com", 80)
    assert origin("http://example.com:80/a") == origin("http://example.com/b")
    assert origin("https://example.com") != origin("http://example.com")
    assert origin("http://example.com:8080") != origin("http://example.com")
    assert str(origin("https://me:s3cret@[::1]:8443/v1")) == "https://[::1]:8443"
    assert str(origin("https://api.example.com:443/v1")) == "https://api.example.com"


def test_a_port_that_is_no_number_is_never_the_same_origin() -> None:
    assert origin("http://example.com:99999/") != origin("http://example.com/")
    assert str(origin("http://example.com:nope/")) == "http://example.com:?"


def test_only_a_post_to_another_origin_is_refused() -> None:
    refuse_cross_origin("POST", "http://a:1/v1/x", "http://a:1/v2/x")
    refuse_cross_origin("GET", "http://a:1/v1/models", "http://b:2/v1/models")
    with pytest.raises(CrossOriginRedirect) as caught:
        refuse_cross_origin("POST", "http://a/v1/x", "https://a/v1/x")  # even an upgrade
    assert (str(caught.value.source), str(caught.value.target)) == ("http://a", "https://a")


def test_a_long_hostile_origin_is_shown_cut() -> None:
    shown = str(origin("http://" + "a" * 5000 + "/"))
    assert len(shown) == 203 and shown.endswith("...")
