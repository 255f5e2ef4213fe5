"""An AWS profile's keys, region and endpoint read from the shared files, for the two
clients of object storage (obstore in ``_object.py``, botocore in ``uploads.py``)."""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ....errors import InvalidParameterError


def aws_profile(options: Mapping[str, Any]) -> dict[str, str]:
    """The keys, region and endpoint of an AWS profile (``aws_profile`` option, else
    ``AWS_PROFILE``, else ``default``) from the shared files (``~/.aws/credentials`` and
    ``~/.aws/config``, or where ``AWS_SHARED_CREDENTIALS_FILE`` / ``AWS_CONFIG_FILE``
    say), as the AWS tools read them; nothing when keys are given or in the environment.
    obstore reads the ``AWS_*`` variables itself, but not these files."""
    if "AWS_ACCESS_KEY_ID" in os.environ or any(
        k in options for k in ("aws_access_key_id", "access_key_id")
    ):
        return {}
    name = str(options.get("aws_profile") or os.environ.get("AWS_PROFILE") or "default")
    home = Path.home() / ".aws"
    creds = configparser.ConfigParser()
    config = configparser.ConfigParser()
    try:
        creds.read(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", home / "credentials"))
        config.read(os.environ.get("AWS_CONFIG_FILE", home / "config"))
    except configparser.Error as exc:
        raise InvalidParameterError(f"the AWS configuration files do not parse: {exc}") from None
    out: dict[str, str] = {}
    section = "default" if name == "default" else f"profile {name}"
    for source, sec in ((config, section), (creds, name)):
        if source.has_section(sec):
            for key in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
                if source.has_option(sec, key):
                    out[key] = source.get(sec, key)
    if config.has_section(section):
        for key, option in (("region", "aws_region"), ("endpoint_url", "aws_endpoint_url")):
            if config.has_option(section, key) and not os.environ.get(option.upper()):
                out[option] = config.get(section, key)
    return out
