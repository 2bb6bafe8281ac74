"""`python -m flopmeter ...` is the flopmeter CLI: the bundled binary, exec'd with the same
arguments, so its output and exit status (0 success, 1 failure, 2 usage) are the CLI's."""

import os
import sys

from ._lib import FlopmeterError, cli_path


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        cli = cli_path()
    except FlopmeterError as e:
        sys.stderr.write("flopmeter: %s\n" % e)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    # exec: the CLI's stdout, stderr and exit status, nothing of Python's in between
    os.execv(cli, ["flopmeter"] + argv)
    return 1   # not reached


if __name__ == "__main__":
    sys.exit(main())
