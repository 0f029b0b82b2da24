"""Writing a file so that a reader never sees half of it, by the profiler's
own rules (writer_write_atomic() in user/output/writer.c): a hidden temporary file
in the same directory ("DIR/.BASE.XXXXXX", so the rename cannot cross file
systems and a crash leaves nothing that looks like a profile), written,
given mode 0666 less the umask (and, under sudo, the owner who ran sudo),
fsync'ed, then renamed over the target, and the directory synced. A target
that exists and is not a regular file (a device, a FIFO, a socket, a
symlink, a directory) is never replaced: checked before and again just
before the rename."""
import errno
import os
import stat
import tempfile

NOT_REGULAR = "it exists and is not a regular file (devices, FIFOs, sockets and symlinks are never replaced)"


class WriteError(OSError):
    """One line saying which file and why: "cannot write PATH: REASON"."""

    def __str__(self):
        return f"cannot write {self.filename}: {self.strerror}"


def _check_target(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise WriteError(e.errno, e.strerror, path) from None
    if not stat.S_ISREG(st.st_mode):
        raise WriteError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EEXIST, NOT_REGULAR, path)


def _output_mode():
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _output_owner():
    """Under sudo, the user who ran it (as ebpfprof does); else None."""
    if os.geteuid() != 0:
        return None
    try:
        uid, gid = int(os.environ["SUDO_UID"]), int(os.environ["SUDO_GID"])
    except (KeyError, ValueError):
        return None
    return (uid, gid) if 0 < uid < 2 ** 32 - 1 and 0 <= gid < 2 ** 32 - 1 else None


def _sync_dir(path):
    """Makes the rename durable; the file is in place whatever happens here."""
    try:
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path, data):
    """Writes data (bytes) to path, whole or not at all; raises WriteError."""
    _check_target(path)
    directory, base = os.path.split(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.", dir=directory or ".")
    except OSError as e:
        raise WriteError(e.errno, e.strerror, path) from None
    try:
        with open(fd, "wb") as f:
            f.write(data)
            f.flush()
            owner = _output_owner()
            if owner:
                os.fchown(f.fileno(), *owner)
            # mkstemp makes 0600; a profile is meant to be shared and read
            os.fchmod(f.fileno(), _output_mode())
            os.fsync(f.fileno())
        _check_target(path)
        os.rename(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and not isinstance(e, WriteError):
            raise WriteError(e.errno, e.strerror, path) from None
        raise
    _sync_dir(path)
