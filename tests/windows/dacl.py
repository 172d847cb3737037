"""Checks the DACL Wine stored for a file: protected, one entry, full access for its owner.

    python3 dacl.py FILE PLAIN

Wine-Staging keeps a file's security descriptor in the Linux file's `user.wine.sd` extended
attribute (a version byte, then a self-relative SECURITY_DESCRIPTOR). Upstream Wine (Debian's
8.0) keeps none: it maps a DACL set on a file onto the Linux mode, coarsely (the user-only DACL
becomes 0775), and reads a DACL back from the mode; there the check is that FILE's mode is not
the mode Wine gives PLAIN, a file a Windows program made in the same folder without a DACL of
its own (so a DACL was set on FILE), and the DACL's content is left to the unit-tested SDDL. For the
Wine smoke suite (tests/windows/smoke.sh): exits 0 when the DACL is `D:P(A;;FA;;;SID)`, SID the
file's owner and a user's (`S-1-5-21-...`, the user the creating process ran as; Wine's
`whoami` prints no SID), and the Linux mode gives nothing to group or others, else 1 naming what
differs.
"""

import os
import stat
import struct
import sys

SE_DACL_PRESENT = 0x0004
SE_DACL_PROTECTED = 0x1000
SE_SELF_RELATIVE = 0x8000
FILE_ALL_ACCESS = 0x1F01FF


def sid_text(buf, off):
    rev, count = buf[off], buf[off + 1]
    auth = int.from_bytes(buf[off + 2 : off + 8], "big")
    subs = struct.unpack_from("<%dI" % count, buf, off + 8)
    return "S-%d-%d%s" % (rev, auth, "".join("-%d" % s for s in subs))


def main():
    path, plain = sys.argv[1], sys.argv[2]
    try:
        raw = os.getxattr(path, "user.wine.sd")
    except OSError:
        got = stat.S_IMODE(os.stat(path).st_mode)
        default = stat.S_IMODE(os.stat(plain).st_mode)
        if got == default:
            print("dacl: %s has the mode of a file without a DACL of its own (%o): no DACL was set"
                  % (path, got), file=sys.stderr)
            return 1
        print("dacl: %s: a DACL was set (Wine mapped it to mode %o; a plain file is %o); Wine keeps"
              " no descriptor to read the entries back from" % (path, got, default))
        return 0
    sd = raw[1:]
    _rev, _sbz, control, owner, _group, _sacl, dacl = struct.unpack_from("<BBHIIII", sd, 0)
    problems = []
    want = sid_text(sd, owner) if owner else "(no owner)"
    if not want.startswith("S-1-5-21-"):
        problems.append("the owner %s is not a user" % want)
    if not control & SE_DACL_PRESENT or dacl == 0:
        problems.append("no DACL")
    if not control & SE_DACL_PROTECTED:
        problems.append("the DACL is not protected (inherited entries may reach the file)")
    aces = []
    if dacl:
        _arev, _asbz, _size, count, _sbz2 = struct.unpack_from("<BBHHH", sd, dacl)
        off = dacl + 8
        for _ in range(count):
            kind, flags, size, mask = struct.unpack_from("<BBHI", sd, off)
            aces.append((kind, flags, mask, sid_text(sd, off + 8)))
            off += size
    if aces != [(0, 0, FILE_ALL_ACCESS, want)]:
        problems.append("entries %r, expected one: allow full access to %s" % (aces, want))
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        problems.append("Wine's Linux mode %o lets group or others in" % mode)
    if problems:
        print("dacl: %s: %s" % (path, "; ".join(problems)), file=sys.stderr)
        return 1
    print("dacl: %s: D:P(A;;FA;;;%s), Linux mode %o" % (path, want, mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
