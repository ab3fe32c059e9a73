"""Bounds on the free-text and map fields a request carries into the log: reasons, annotations, names.

Each of these is stored in an event, and an event must fit one JetStream message (1 MiB): an unbounded field was a
500 (`MaxPayloadError`) at best, and at worst a value every later scheduler pass carried into its own commits (a
1 MB cordon reason quoted in every blocked cause). msgspec checks these types as it decodes a body, so a field past
its bound is a 400 naming the field and the bound, before anything is stored.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

MAX_REASON = 1_024  # a hold's, cordon's, eviction's or revocation's reason (characters)
MAX_ANNOTATIONS = 64  # entries of a workflow's `annotations`
MAX_ANNOTATION_KEY = 253  # as a Kubernetes label key (prefix and name)
MAX_ANNOTATION_VALUE = 1_024  # so all of them stay under 100 KiB, the Submitted event's room beside its definition
MAX_FIELD = 4_096  # any other free text: a catalog source's location or ref, an id, a name
MAX_EMAIL = 254  # RFC 5321's longest address
MAX_PASSWORD = 1_024

Reason = Annotated[str, msgspec.Meta(max_length=MAX_REASON)]
Text = Annotated[str, msgspec.Meta(max_length=MAX_FIELD)]
Email = Annotated[str, msgspec.Meta(max_length=MAX_EMAIL)]
Password = Annotated[str, msgspec.Meta(max_length=MAX_PASSWORD)]
Annotations = Annotated[
    dict[Annotated[str, msgspec.Meta(max_length=MAX_ANNOTATION_KEY)],
         Annotated[str, msgspec.Meta(max_length=MAX_ANNOTATION_VALUE)]],
    msgspec.Meta(max_length=MAX_ANNOTATIONS)]
