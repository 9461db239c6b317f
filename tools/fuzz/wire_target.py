# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""wire_target: drive build/tests/sroce_wire_target and read sroce's state.

Target starts the victim program (tests/user/wire-target.c), reads its
first JSON line (QPNs, PSNs, rkey, MR address) and sends it line commands,
each answer read with a time bound: an answer that does not come is
TargetHung (a verbs call that does not return).  rdma_qp() and
rdma_stats() read the engine state and the counters through iproute2's
rdma tool.
"""
import json
import os
import select
import signal
import subprocess
import time

SRC = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TARGET = os.path.join(SRC, 'build', 'tests', 'sroce_wire_target')


class TargetError(Exception):
    pass


class TargetHung(TargetError):
    pass


def pattern(off, n):
    """The bytes the target fills its MR with (wire-target.c pat())."""
    return bytes(((i ^ (i >> 8) ^ 0x5a) & 0xff) for i in range(off, off + n))


class Target:
    """The victim program, one line command at a time."""

    def __init__(self, peer='10.77.0.99', dev='sroce0', args=(),
                 binary=TARGET, timeout=60, stderr=None):
        self.buf = b''
        self.p = subprocess.Popen([binary, '-d', dev] + [str(a) for a in args]
                                  + [peer], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=stderr)
        self.info = self._answer(timeout, 'start')
        if not self.info.get('ok'):
            raise TargetError('target did not start: %r' % self.info)
        self.mr = self.info['mr']

    def qpn(self, qp):
        return self.info['qp'][qp]['qpn']

    def _line(self, timeout):
        end = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while b'\n' not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                raise TargetHung('no answer in %.1f s' % timeout)
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise TargetError('target exited (rc %s)' % self.p.poll())
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return line.decode()

    def _answer(self, timeout, what):
        line = self._line(timeout)
        try:
            return json.loads(line)
        except ValueError:
            raise TargetError('%s: not JSON: %r' % (what, line[:200]))

    def cmd(self, line, timeout=30):
        """Send one command, return its answer (a dict)."""
        try:
            self.p.stdin.write((line + '\n').encode())
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise TargetError('target exited (rc %s)' % self.p.poll())
        return self._answer(timeout, line)

    def checked(self, line, timeout=30):
        a = self.cmd(line, timeout)
        if not a.get('ok'):
            raise TargetError('%s: %s' % (line, a.get('error', a)))
        return a

    # The commands of wire-target.c.
    def post_recv(self, qp, n=1):
        return self.checked('post_recv %s %d' % (qp, n))['wr_ids']

    def post_send(self, qp, op, length, raddr=0, rkey=0, imm=None):
        line = 'post_send %s %s %d %d %d' % (qp, op, length, raddr, rkey)
        if imm is not None:
            line += ' %d' % imm
        return self.checked(line)['wr_id']

    def poll(self, ms=0, n=-1):
        return self.checked('poll %d %d' % (ms, n),
                            timeout=ms / 1000 + 30)['wc']

    def state(self, qp):
        return self.checked('state %s' % qp)['state']

    def status(self):
        """({qp: state}, [completions]) in one round trip."""
        a = self.checked('status')
        return a['state'], a['wc']

    def dump(self, off, n):
        return bytes.fromhex(self.checked('dump %d %d' % (off, n))['hex'])

    def rdump(self, wr_id, off, n):
        return bytes.fromhex(self.checked('rdump %d %d %d' %
                                          (wr_id, off, n))['hex'])

    def verify(self):
        return self.checked('verify')

    def dereg(self, timeout=30):
        return self.cmd('dereg', timeout)

    def destroy(self, qp, timeout=30):
        return self.cmd('destroy %s' % qp, timeout)

    def error(self, qp):
        return self.checked('error %s' % qp)

    def access(self, qp, flags):
        """The QP's remote access flags (IBV_ACCESS_*), set in RTS."""
        return self.checked('access %s %d' % (qp, flags))

    def attach(self, qp, group):
        """ibv_attach_mcast to @group, an IPv6 (or ::ffff:a.b.c.d)
        address."""
        return self.checked('attach %s %s' % (qp, group))

    def reconnect(self, qp, rq_psn=None, sq_psn=None):
        line = 'reconnect %s' % qp
        if rq_psn is not None:
            line += ' %d %d' % (rq_psn, sq_psn if sq_psn is not None else 0)
        a = self.checked(line)
        self.info['qp'][qp]['rq_psn'] = a['rq_psn']
        self.info['qp'][qp]['sq_psn'] = a['sq_psn']
        return a

    def wait_answer(self, timeout):
        """The answer of a command that timed out before, if it comes."""
        return self._answer(timeout, 'late answer')

    def close(self, timeout=30):
        """quit; a target that does not exit in time is killed (it is
        ours).  Returns the exit status, or None if it would not die."""
        if self.p.poll() is None:
            try:
                self.cmd('quit', timeout)
            except TargetError:
                pass
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.send_signal(signal.SIGKILL)
            try:
                return self.p.wait(5)
            except subprocess.TimeoutExpired:
                return None  # in the kernel, uninterruptible


def _run_json(argv, timeout=60):
    try:
        out = subprocess.run(argv, capture_output=True, timeout=timeout,
                             text=True).stdout
        return json.loads(out) if out.strip() else None
    except (subprocess.TimeoutExpired, ValueError, OSError):
        return None


def _find(obj, pred):
    """The first dict in a JSON tree for which pred(dict) is true."""
    if isinstance(obj, dict):
        if pred(obj):
            return obj
        obj = list(obj.values())
    if isinstance(obj, list):
        for o in obj:
            r = _find(o, pred)
            if r is not None:
                return r
    return None


def rdma_qp(dev, qpn):
    """The engine state of a QP ('rdma res show qp ... -dd'): resp_epsn,
    req_psn, comp_psn, ... (ints), or {} if the tool cannot tell."""
    j = _run_json(['rdma', '-j', '-dd', 'res', 'show', 'qp', 'link',
                   '%s/1' % dev, 'lqpn', str(qpn)])
    d = _find(j, lambda o: o.get('lqpn') == qpn) or {}
    out = {}
    for k, v in list(d.items()) + list(_flat_driver(d).items()):
        if isinstance(v, int):
            out[k] = v
        elif isinstance(v, str) and v.isdigit():
            out[k] = int(v)
        elif isinstance(v, str) and k == 'state':
            out[k] = v
    return out


def _flat_driver(d):
    """Driver attributes, wherever this iproute2 puts them."""
    out = {}
    for v in d.values():
        if isinstance(v, dict):
            out.update(v)
        elif isinstance(v, list):
            for e in v:
                if isinstance(e, dict):
                    out.update(e)
    return out


def rdma_stats(dev):
    """The device's counters ('rdma statistic show link DEV/1'), a dict."""
    j = _run_json(['rdma', '-j', 'statistic', 'show', 'link', '%s/1' % dev])
    d = _find(j, lambda o: 'rx_packets' in o or 'tx_packets' in o) or {}
    return {k: v for k, v in d.items() if isinstance(v, int)}
