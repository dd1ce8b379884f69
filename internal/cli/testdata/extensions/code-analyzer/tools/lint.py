import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("--file", required=True)
parser.add_argument("--strict", default="false")
args = parser.parse_args()
print(json.dumps({"file": args.file, "issues": []}))
