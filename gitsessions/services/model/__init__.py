"""Model: the model client (`model.py`: the openai SDK's public API), its errors and
their one mapper (`errors.py`), an answer read as a reply (`reassembly.py`, the reply as
plain data in `completion.py`), the request's worker thread and whole-request deadline
(`inflight.py`), the caps on an answer (`reply_limits.py`), where a redirect may go
(`origins.py`), chat's quick look at the server (`endpoint.py`), cost estimates
(`pricing.py`).

Owns: every byte sent to and read from the model server. Must never send the
conversation to another origin, read more of an answer than its caps, swallow a Ctrl-C,
or import openai outside `model.py`.
Uses: settings.
"""
