"""Writing a file so that a reader never sees half of it, by the profiler's
own rules (atomic_file_write() in user/base/atomic_file.c): a hidden temporary
file in the same directory ("DIR/.BASE.XXXXXX", so the rename cannot cross
file systems and a crash leaves nothing that looks like a profile), written,
fsync'ed, then renamed over the target, and the directory synced. A target
that exists and is not a regular file (a device, a FIFO, a socket, a
symlink, a directory) is never replaced: checked before and again just
before the rename. Owners as ebpfprof's: a file replaced keeps its owner,
group and permissions (as root; the set-id bits dropped); a file created
gets mode 0666 less the umask and, under sudo, belongs to the user who ran
sudo. Only a file created here is handed over: the new name is taken with
RENAME_NOREPLACE, so a file that appeared there meanwhile (root's, say) is
seen and keeps its owner."""
import ctypes
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
    """What is at path now: its lstat, or None if nothing; raises
    WriteError if it is not a regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise WriteError(e.errno, e.strerror, path) from None
    if not stat.S_ISREG(st.st_mode):
        raise WriteError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EEXIST, NOT_REGULAR, path)
    return st


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


def _set_owner(fd, existing):
    """The owner and mode of the file about to take the name: a replaced
    file's kept (as root: without root the new file can only be ours); a
    new file's the sudo user's and 0666 less the umask."""
    if existing:
        owner = (existing.st_uid, existing.st_gid) if os.geteuid() == 0 else None
        mode = stat.S_IMODE(existing.st_mode) & 0o777
    else:
        owner, mode = _output_owner(), _output_mode()
    if owner:
        os.fchown(fd, *owner)
    # mkstemp makes 0600; a profile is meant to be shared and read
    os.fchmod(fd, mode)


_AT_FDCWD, _RENAME_NOREPLACE = -100, 1
_libc = ctypes.CDLL(None, use_errno=True)


def _rename_noreplace(tmp, path):
    """rename(tmp, path) unless path exists: True when renamed, False when
    something is at path now. A file system (or libc) without
    RENAME_NOREPLACE gets a plain rename: only the check before stands
    between, as with any rename."""
    renameat2 = getattr(_libc, "renameat2", None)
    if renameat2 is not None:
        if renameat2(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(path), _RENAME_NOREPLACE) == 0:
            return True
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            return False
        if err not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(err, os.strerror(err), path)
    os.rename(tmp, path)
    return True


def _put_in_place(fd, tmp, path):
    """Renames tmp (open as fd) to path with the owner path's file gets."""
    for _ in range(4):
        existing = _check_target(path)
        _set_owner(fd, existing)
        os.fsync(fd)
        if existing:
            os.rename(tmp, path)
            return
        if _rename_noreplace(tmp, path):
            return
    raise WriteError(errno.EAGAIN, "it keeps appearing and disappearing", path)


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
            _put_in_place(f.fileno(), tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and not isinstance(e, WriteError):
            raise WriteError(e.errno, e.strerror, path) from None
        raise
    _sync_dir(path)
