"""countWords: prints the line, word and character counts of a file as JSON."""
import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", required=True, help="The file to count.")
    args = parser.parse_args()
    try:
        with open(args.file, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        print(f"cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 1
    print(json.dumps({
        "file": args.file,
        "lines": text.count("\n") + (0 if text.endswith("\n") or not text else 1),
        "words": len(text.split()),
        "chars": len(text),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
