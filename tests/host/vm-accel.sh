#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The VM harness tests itself: tools/vm/accel chooses KVM only when KVM
# boots the kernel, and tools/vm/run falls back to TCG on a host whose
# /dev/kvm is there but broken.  A stand-in qemu-system-x86_64, first on
# PATH, fails the ways the real one was seen to fail under KVM (abort on
# an MSR, or a hang without a line on the console) and hands every TCG
# run to the real QEMU.  Runs on the host; prints TAP.
set -uo pipefail
cd "$(dirname "$0")/../.."
src=$(pwd)

. tests/lib/host.sh

real=$(command -v qemu-system-x86_64)
kernel=$(ls -v /boot/vmlinuz-* 2>/dev/null | tail -n 1)
if [ -z "$real" ] || [ -z "$kernel" ]; then
	echo "ok 1 - KVM fallback # SKIP no QEMU or no kernel image (make deps)"
	echo "1..1"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
# The stand-in: its mode comes from $tmp/mode; every KVM boot is counted.
cat > "$tmp/bin/qemu-system-x86_64" <<EOF
#!/bin/bash
case " \$* " in
*accel=kvm*)
	echo call >> "$tmp/calls"
	case \$(cat "$tmp/mode") in
	abort)
		echo "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x0" >&2
		echo "qemu-system-x86_64: ../../target/i386/kvm/kvm.c:3064: kvm_buf_set_msrs: Assertion \\\`ret == cpu->kvm_msr_buf->nmsrs' failed." >&2
		kill -ABRT \$\$ ;;
	hang) exec sleep 600 ;;
	boots)	# the console line a booting kernel prints
		for a in "\$@"; do
			case \$a in file:*) echo "VFS: Unable to mount root fs" > "\${a#file:}" ;; esac
		done
		exit 0 ;;
	esac ;;
esac
exec "$real" "\$@"
EOF
chmod +x "$tmp/bin/qemu-system-x86_64"
: > "$tmp/kvm"	# a /dev/kvm that is there and writable

accel() {	# accel MODE: run tools/vm/accel with the stand-in
	echo "$1" > "$tmp/mode"
	rm -f "$tmp/calls"
	PATH=$tmp/bin:$PATH SROCE_KVM_DEV=$tmp/kvm SROCE_ACCEL_CACHE=$tmp/cache \
		SROCE_KVM_PROBE_TIMEOUT=5 tools/vm/accel "$kernel" > "$tmp/out" 2> "$tmp/why"
}
calls() { [ -f "$tmp/calls" ] && wc -l < "$tmp/calls" || echo 0; }
show() { sed 's/^/# /' "$tmp/why"; }

accel abort
ok $? "accel: a QEMU that aborts under KVM: exit 0"
show
grep -qx "tcg max,la57=off" "$tmp/out" && grep -q 'probe failed (qemu exit 134' "$tmp/why"
ok $? "accel: ... chooses TCG and says the probe failed"
accel abort
[ "$(calls)" -eq 0 ] && grep -q 'probed earlier' "$tmp/why"
ok $? "accel: the answer is cached (no second probe)"

rm -rf "$tmp/cache"
start=$SECONDS
accel hang
took=$((SECONDS - start))
show
grep -qx "tcg max,la57=off" "$tmp/out" && grep -q 'did not boot the kernel in 5 s' "$tmp/why" &&
	[ "$took" -lt 15 ]
ok $? "accel: a QEMU that hangs under KVM: TCG after the probe timeout (${took} s)"

rm -rf "$tmp/cache"
accel boots
show
grep -qx "kvm host" "$tmp/out"
ok $? "accel: a KVM that boots the kernel is used, with -cpu host"

rm -rf "$tmp/cache"
SROCE_ACCEL=tcg accel boots
grep -qx "tcg max,la57=off" "$tmp/out" && [ "$(calls)" -eq 0 ]
ok $? "accel: SROCE_ACCEL=tcg overrides without a probe"
SROCE_ACCEL=kvm accel abort
grep -qx "kvm host" "$tmp/out" && [ "$(calls)" -eq 0 ]
ok $? "accel: SROCE_ACCEL=kvm overrides without a probe"
SROCE_ACCEL=fast accel boots
[ $? -eq 2 ] && grep -q 'must be kvm or tcg' "$tmp/why"
ok $? "accel: SROCE_ACCEL=fast is refused (exit 2)"
rm -f "$tmp/kvm"
accel boots
grep -qx "tcg max,la57=off" "$tmp/out" && grep -q "no $tmp/kvm" "$tmp/why" && [ "$(calls)" -eq 0 ]
ok $? "accel: no KVM device: TCG without a probe"

# End to end: a VM test through tools/vm/run on a host whose KVM aborts.
: > "$tmp/kvm"
echo abort > "$tmp/mode"
PATH=$tmp/bin:$PATH SROCE_KVM_DEV=$tmp/kvm SROCE_ACCEL_CACHE=$tmp/cache \
	SROCE_KVM_PROBE_TIMEOUT=5 tools/vm/run -M none -o "$tmp/vm" -t 240 \
	tests/host/guest/boot.sh > "$tmp/run.tap" 2>&1
rc=$?
sed 's/^/# run: /' "$tmp/run.tap"
[ "$rc" -eq 0 ] && grep -q '# vm: accelerator tcg: a KVM probe failed' "$tmp/run.tap" &&
	grep -q 'ok .* vm0: guest booted' "$tmp/run.tap"
ok $? "run: a host with a broken KVM boots the test VM under TCG"

echo "1..$n"
[ "$fails" -eq 0 ]
