"""Turn template.yaml into CloudFormation the way `sam deploy` does.

Reads the SAM template path from argv[1], replaces each function's local
CodeUri with a placeholder s3:// location (the translator wants one, and the
local deploy never runs the code from it), and prints the CloudFormation JSON.
"""
import json
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    """The template names no AWS managed policies, so nothing is looked up."""

    def load(self):
        return {}


def main():
    path, bucket = sys.argv[1], sys.argv[2]
    with open(path) as f:
        sam = yaml_parse(f.read())
    for name, res in sam.get("Resources", {}).items():
        if res.get("Type") == "AWS::Serverless::Function":
            res.setdefault("Properties", {})["CodeUri"] = "s3://%s/%s.zip" % (bucket, name)
    cfn = transform(sam, {}, NoManagedPolicies())
    json.dump(cfn, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
