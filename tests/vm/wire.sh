#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 600
#
# Hostile input from the wire: deterministic attacks on sroce's QPs by a
# fake remote peer, 10.77.0.99 (a static neighbour on eth0, no host behind
# it).  build/tests/sroce_wire_target is the victim (RC, UC and UD QPs, an
# MR); tools/fuzz/wire-regress crafts the packets (tools/fuzz/roce_packet.py)
# and sends them through lo (let in by debugfs rx_lo), reading sroce's
# answers on eth0.  Each scenario runs its own target (gsi, which talks to
# QP1 only, none):
#   icrc        roce_packet's ICRC is the kernel's (IPv4, IPv6); a wrong
#               one is dropped and counted
#   ud          UD receives over IPv4 and IPv6, a wrong Q_Key is dropped, so
#               is a datagram to a multicast address (IPv4, IPv6) that
#               names a QP (counted in rx_multicast all the same)
#   spoof       RC/UC requests and RC ACK/NAKs from an address that is not
#               the peer are not executed and do not kill the QP
#   pkey        a P_Key outside the default partition is dropped
#   dereg       WRITE_FIRST then silence: dereg and destroy return at once,
#               the rest of the WRITE does not reach the memory
#   rnr         WRITE_ONLY_IMM without a receive: RNR NAK, the next PSN
#               gets no sequence NAK, the retry of the same PSN completes
#   late_ack    an ACK for a PSN sent before an RNR NAK's go-back completes
#               the SENDs it acknowledges; nothing is sent again
#   uc_resync   a UC message that lost a packet is dropped, its receive WQE
#               takes the next message
#   flush       an RC QP sent to Error mid-SEND still completes every receive
#   counters    each receive drop, NAK, ACK, duplicate, out-of-sequence,
#               retransmit and retry-timeout counter provoked once and read
#               back, with every sroce tracepoint on; each tracepoint fired;
#               a CNP counted in rp_cnp_ignored, not as a bad header
#   roce_trace  tools/roce-trace decodes every AETH syndrome
#   cli         roce_packet.py's command line sends a WRITE, shows the ACK
#   atomic_write  RDMA Atomic Write: lands and is answered by an empty READ
#               Response Only, a duplicate is answered but not written
#               again, none on UC, a misaligned target is NAKed
#   atomic_write_answers  ours completes on an ACK and on a READ Response
#               Only without payload (rdma_rxe 6.2+); one without AckReq is
#               answered; ours count against max_rd_atomic
#   rdma_flush  a FLUSH (no flush rights in Linux 6.1): NAK invalid request
#               and Error; one behind the expected PSN dropped; none on UC
#   atomic_replay FETCH_ADD answered, its duplicate replayed without adding
#               (not one naming another address);
#               after RESET and a new connection, not replayed
#   gsi         PerfMgt MADs at QP1: Gets answered (IPv4, IPv6), a Set
#               refused; 600 datagrams longer than a MAD dropped, counted,
#               and QP1 still receives after them
#   dup_read    a duplicate READ answered again only when it asks for (part
#               of) a READ the QP took; others dropped without a NAK
#   dup_read_mid  a duplicate READ from the middle of a READ still being
#               answered cuts that answer short and is answered from there
#   uc_hostile  UC: a PSN far ahead does not stall the QP; a SEND too long
#               for its receive, or a FIRST short of the MTU, is dropped
#               and counted, the WQE takes the next message
#   access      remote write taken away (RTS to RTS) mid-WRITE: the rest
#               does not land (RC: NAK invalid request, QP to Error; UC:
#               counted drop)
#   ud_oversize a UD SEND over the port MTU completes successfully and is
#               not sent (C10-93.1.1); the QP stays in RTS
#   lengths     a packet not a whole number of words dropped and counted,
#               its PSN not taken; four READs of 64 KiB all answered in
#               PSN order; a WRITE over 2^31 NAKed as an invalid request,
#               nothing landed
#   nak_order   an RNR NAK, a sequence NAK and a fatal (remote access)
#               NAK sent after all the READ responses queued before them,
#               never between; the QP enters Error after the last
#   responses   answers IBA does not allow: a reserved ACK syndrome dropped
#               and counted, a sequence NAK's copy, a late RNR NAK and a
#               late remote access NAK ignored, a READ_RESPONSE_MIDDLE for
#               a one-packet READ a bad response error
#   bad_answer  a READ response or atomic ACK for the PSN of our SEND
#               completes it with a bad response error
#   timeout_window after a retry timeout the oldest packet goes again alone,
#               not the window; each one acknowledged lets one more go
#   overrun_nak a sequence NAK with no retry left acknowledges more WQEs
#               than the CQ holds: the QP goes to Error, its SQ whole, and
#               is destroyed at once
#   lo          a UD SEND from an ordinary UDP socket on the host, through
#               lo: dropped and counted; received with debugfs rx_lo set
#   rnr_wait    of two QPs with a SEND out, the one waiting out an RNR NAK
#               gives the other its share of the window until it sends
#               again (tracepoints); its retry timer stays quiet meanwhile
#   rnr_seq_exc retry_cnt 0: an RNR NAK for the first of two SENDs, then a
#               sequence NAK for the second: the first completes, the
#               second fails with retry exceeded
#   mcast_local the host's own UD datagrams to an IPv4 and an IPv6 group
#               reach its attached QP (IBA 10.5), neither a bad source; one
#               naming the QP instead of the multicast QPN is refused
#   destroy_wait a packet held in a plug qdisc holds its QP: destroy waits
#               for it and says so in the kernel log after 10 s
#   ud_dgid     (sroce1 on a veth pair) a UD datagram that arrives on the
#               bound netdev for another of the host's addresses: dropped
#               and counted; one to the device's own address received;
#               one to VLAN 100's address untagged dropped and counted,
#               through VLAN 100 received; one from the host's own IPv6
#               address a bad source, from its own IPv4 address too with
#               accept_local set; an RC NAK to the QP's untagged
#               address through VLAN 100 a bad source
. tests/lib/vm.sh

REGRESS="$SROCE_SRC/tools/fuzz/wire-regress"
objects() { cat /sys/kernel/debug/sroce/objects; }

# scenario NAME: run one scenario, its TAP lines become ours.
scenario() {
	local rc line
	timeout -k 5 "$(( 150 * ${SROCE_TIMEOUT_SCALE:-1} ))" \
		python3 "$REGRESS" "$1" > "/tmp/wire-$1.out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok - "*)     ok 0 "${line#ok - }" ;;
		"not ok - "*) ok 1 "${line#not ok - }" ;;
		"#"*)         echo "$line" ;;
		*)            diag "$1: $line" ;;
		esac
	done < "/tmp/wire-$1.out"
	# 0: all passed, 1: a check failed (reported above); else it died.
	[ "$rc" -le 1 ] || ok 1 "$1: scenario ran to the end (rc $rc)"
}

fake_peer_up
before=$(objects)

for s in icrc ud spoof pkey dereg rnr late_ack uc_resync flush counters roce_trace cli \
	 atomic_write atomic_write_answers rdma_flush atomic_replay gsi dup_read dup_read_mid uc_hostile access ud_oversize lengths \
	 nak_order responses bad_answer timeout_window overrun_nak lo rnr_wait rnr_seq_exc mcast_local destroy_wait; do
	scenario "$s"
done

# ud_dgid: a second device on a veth pair whose other end is in a
# namespace, and an address of the host on no bound netdev.
ip netns add far && ip link add vda type veth peer name vdb netns far &&
	ip address add 10.78.0.1/24 dev vda && ip link set vda up &&
	ip -n far address add 10.78.0.2/24 dev vdb && ip -n far link set vdb up &&
	ip -n far route add 10.79.0.0/24 via 10.78.0.1 &&
	ip link add dummy0 type dummy && ip address add 10.79.0.1/24 dev dummy0 &&
	ip link set dummy0 up &&
	ip link add link vda name vda.100 type vlan id 100 &&
	ip address add 10.80.0.1/24 dev vda.100 && ip link set vda.100 up &&
	ip -n far link add link vdb name vdb.100 type vlan id 100 &&
	ip -n far address add 10.80.0.2/24 dev vdb.100 &&
	ip -n far link set vdb.100 up &&
	ip address add fd78::1/64 dev vda nodad &&
	ip -n far address add fd78::2/64 dev vdb nodad &&
	sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.vda/100.rp_filter=0
ok $? "ud_dgid: namespace far, veth vda-vdb, 10.79.0.1 on dummy0, VLAN 100 over vda-vdb, fd78::1-2"
check "rdma link add sroce1 on vda" rdma link add sroce1 type sroce netdev vda
check "sroce1 has the GID of 10.78.0.1" \
	wait_for 10 sroce_gid "$(gid4_tail 10.78.0.1)" sroce1
check "sroce1 has the GID of 10.80.0.1 (vda.100)" \
	wait_for 10 sroce_gid "$(gid4_tail 10.80.0.1)" sroce1
check "sroce1 has the GID of fd78::1" \
	wait_for 10 sroce_gid fd78:0000:0000:0000:0000:0000:0000:0001 sroce1
scenario ud_dgid
check "rdma link delete sroce1" rdma link delete sroce1
ip netns del far; ip link del dummy0

rdma statistic show link sroce0/1 | tr -s ' ' '\n' | paste -d= - - | tr '\n' ' ' | sed 's/^/# /'
echo
check "no target process is left" bash -c "! pgrep -x sroce_wire_targ"
check "every object the targets made is gone" wait_for 30 output_is "$before" objects
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done
