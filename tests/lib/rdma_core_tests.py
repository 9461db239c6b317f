#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Run rdma-core's own test suite (Debian's python3-pyverbs) with TAP output.

Usage: rdma_core_tests.py TESTS_DIR [run_tests.py options, e.g. --dev sroce0]

TESTS_DIR is a copy of /usr/share/doc/rdma-core/tests with its .py.gz files
unpacked.  The suite is loaded as its run_tests.py loads it.  A test that
ran prints "ok N - ID" or "not ok N - ID" with its traceback as
diagnostics; a test the suite skips itself (another vendor's device, a
feature the device does not offer) is listed as a diagnostic, not counted.
"""
import os
import sys
import traceback
import unittest
from importlib.machinery import SourceFileLoader


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0
        self.passed = 0
        self.failed = 0
        self.skipped_ids = []

    def _line(self, good, test, err=None):
        self.n += 1
        if good:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'ok' if good else 'not ok'} {self.n} - {test.id()}",
              flush=True)
        if err:
            text = ''.join(traceback.format_exception(*err))
            for line in text.rstrip().splitlines()[-12:]:
                print(f"# {line}", flush=True)

    def addSuccess(self, test):
        self._line(True, test)

    def addError(self, test, err):
        self._line(False, test, err)

    def addFailure(self, test, err):
        self._line(False, test, err)

    def addSkip(self, test, reason):
        self.skipped_ids.append((test.id(), reason))

    def addExpectedFailure(self, test, err):
        self._line(True, test)

    def addUnexpectedSuccess(self, test):
        self._line(False, test)

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._line(False, subtest, err)


def main():
    tests_dir = os.path.abspath(sys.argv[1])
    sys.path.insert(0, tests_dir)
    sys.argv = [os.path.join(tests_dir, 'run_tests.py')] + sys.argv[2:]
    from args_parser import parser
    tests = SourceFileLoader(
        'tests', os.path.join(tests_dir, '__init__.py')).load_module()
    parser.parse_args()
    suite = unittest.defaultTestLoader.loadTestsFromModule(tests)
    result = TapResult()
    suite.run(result)
    reasons = {}
    for tid, reason in result.skipped_ids:
        reasons.setdefault(reason, []).append(tid)
    for reason, ids in sorted(reasons.items(), key=lambda r: -len(r[1])):
        print(f"# skipped by the suite ({len(ids)}): {reason}")
    print(f"1..{result.n}")
    print(f"# rdma-core tests: {result.passed} passed, {result.failed} "
          f"failed, {len(result.skipped_ids)} skipped by the suite")
    return 1 if result.failed or not result.n else 0


if __name__ == '__main__':
    sys.exit(main())
