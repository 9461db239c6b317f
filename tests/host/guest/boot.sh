#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 240
#
# The smallest guest script: tests/host/vm-accel.sh boots it to prove that
# tools/vm/run brings a VM up on the accelerator it chose.
echo "ok 1 - guest booted ($(uname -r), $(nproc) CPUs)"
echo "1..1"
