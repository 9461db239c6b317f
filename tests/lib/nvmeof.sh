# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NVMe-oF over an RDMA device, for the test scripts: an nvmet target with a
# memory-backed null_blk namespace (so data can be verified) behind an rdma
# port, and an nvme-rdma host that connects to it and runs fio with crc32c
# verification.  Nothing here is sroce-specific.

NQN=nqn.2026-11.invalid.sroce:test
NVMET=/sys/kernel/config/nvmet
NVME_TR=${NVME_TR:-rdma}	# the transport: rdma (or tcp, for comparison)

# nvmet_up ADDR FAMILY [MODPROBE ARGS]: the subsystem, its namespace and a
# $NVME_TR port on ADDR:4420 (FAMILY ipv4 or ipv6).
nvmet_up() {
	local sub=$NVMET/subsystems/$NQN
	modprobe null_blk nr_devices=1 gb=1 memory_backed=1 queue_mode=2 &&
		modprobe "nvmet-$NVME_TR" "${@:3}" || return 1
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config || return 1
	mkdir "$sub" && echo 1 > "$sub/attr_allow_any_host" &&
		mkdir "$sub/namespaces/1" &&
		echo /dev/nullb0 > "$sub/namespaces/1/device_path" &&
		echo 1 > "$sub/namespaces/1/enable" || return 1
	nvmet_port_up "$1" "$2"
}

nvmet_port_up() {	# nvmet_port_up ADDR FAMILY
	local port=$NVMET/ports/1
	mkdir "$port" && echo "$NVME_TR" > "$port/addr_trtype" &&
		echo "$2" > "$port/addr_adrfam" &&
		echo "$1" > "$port/addr_traddr" &&
		echo 4420 > "$port/addr_trsvcid" &&
		ln -s "$NVMET/subsystems/$NQN" "$port/subsystems/$NQN"
}

nvmet_port_down() {
	rm -f "$NVMET/ports/1/subsystems/$NQN" && rmdir "$NVMET/ports/1"
}

nvmet_down() {
	local sub=$NVMET/subsystems/$NQN
	[ -d "$NVMET/ports/1" ] && { nvmet_port_down || return 1; }
	echo 0 > "$sub/namespaces/1/enable" && rmdir "$sub/namespaces/1" &&
		rmdir "$sub" && modprobe -r "nvmet-$NVME_TR" nvmet null_blk
}

# The host's namespace block device (the VMs have no other NVMe device).
nvme_bdev() { ls /sys/block | grep -m1 '^nvme[0-9]*n[0-9]*$'; }
nvme_ctrls() { ls /sys/class/nvme 2>/dev/null | grep -c .; }

# nvme_host_connect ADDR: over $NVME_TR, two I/O queues, a write queue and a poll queue;
# a lost controller is given up after 10 s.
nvme_host_connect() {
	modprobe "nvme-$NVME_TR" || return 1
	nvme connect -t "$NVME_TR" -a "$1" -s 4420 -n "$NQN" -i 2 -W 1 -P 1 \
		--ctrl-loss-tmo=10 --reconnect-delay=1 || return 1
	wait_for 30 nvme_bdev
}

nvme_host_disconnect() {
	nvme disconnect -n "$NQN" && wait_for 30 output_is 0 nvme_ctrls
}

# fio_verify BS DEPTH [FIO ARGS...]: write 16 MiB in two jobs (2 x 8 MiB
# regions), read it back and check every block's crc32c.
fio_verify() {
	local bs=$1 qd=$2
	shift 2
	timeout 600 fio --name=verify --filename="/dev/$(nvme_bdev)" \
		--direct=1 --ioengine=libaio --rw=randwrite --bs="$bs" \
		--iodepth="$qd" --size=8M --numjobs=2 --offset_increment=8M \
		--verify=crc32c --do_verify=1 --verify_fatal=1 \
		--group_reporting --output-format=terse --terse-version=3 "$@" \
		> /tmp/fio.out 2> /tmp/fio.err || {
		tail -5 /tmp/fio.err
		return 1
	}
}

# nvme_pair NAME HOST_STEPS: the target on VM 0 ($NVME_TR port on its test
# address), on VM 1 a host that connects, runs the shell function
# HOST_STEPS NAME, disconnects and unloads its transport; both VMs return
# once the target is down again.
nvme_pair() {
	local name=$1 steps=$2 tgt
	tgt=$(vm_ip 0)
	if [ "$VM_ID" = 0 ]; then
		check "$name: NVMe-oF target up ($NVME_TR)" nvmet_up "$tgt" ipv4
		check "$name: NVMe-oF target listens" wait_for 30 listening 4420
		vm_put "nvmet-$name" 1
		vm_get "nvme-$name" 900 > /dev/null
		check "$name: NVMe-oF target down" nvmet_down
	else
		vm_get "nvmet-$name" 300 > /dev/null
		check "$name: NVMe-oF connect ($NVME_TR)" nvme_host_connect "$tgt"
		$steps "$name"
		check "$name: NVMe-oF disconnect" nvme_host_disconnect
		check "$name: nvme-$NVME_TR unloaded" modprobe -r "nvme-$NVME_TR"
		vm_put "nvme-$name" 1
	fi
	vm_barrier "nvme-done-$name" 900
}
