"""Reads SAM templates and runs the SAM transform on them, offline.

Usage: python3 transform.py TEMPLATE...

Prints one JSON object: for each TEMPLATE, {"sam": the template as
written, "cfn": the transformed template} or {"error": why not}. It uses
the aws-sam-translator that cfn-lint brings, cfn-lint's reader of
CloudFormation YAML (short-form tags), and no AWS: names of managed
policies resolve to nothing (the template names none), and CodeUri points
at a stand-in S3 object, as `sam package` would point it at the upload.
"""

import copy
import json
import os
import sys

# The transform asks boto for a region to spell ARNs; no call is made.
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

# Imported after the region is set. pylint: disable=wrong-import-position
from cfnlint.decode import decode
from samtranslator.public.exceptions import InvalidDocumentException
from samtranslator.translator.transform import transform


class NoManagedPolicies:
    """A managed-policy loader that needs no IAM: it knows no names."""

    def load(self):
        return {}


def one(path):
    template, problems = decode(path)
    if problems or template is None:
        return {"error": "; ".join(str(p) for p in problems) or "cannot read the template"}
    sam = copy.deepcopy(template)
    for resource in template.get("Resources", {}).values():
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::Function":
            resource.setdefault("Properties", {})["CodeUri"] = "s3://bucket/key"
    try:
        cfn = transform(template, {}, NoManagedPolicies())
    except InvalidDocumentException as e:
        return {"error": "; ".join(cause.message for cause in e.causes)}
    return {"sam": sam, "cfn": cfn}


def main():
    out = {}
    for path in sys.argv[1:]:
        try:
            out[path] = one(path)
        except Exception as e:  # pylint: disable=broad-except
            out[path] = {"error": f"{type(e).__name__}: {e}"}
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()
