//! tantivy's folder for an index this process may read but not write.
//!
//! Opening a reader takes tantivy's meta lock, which creates (or opens for
//! writing) a lock file: in a folder that cannot be written, that alone would
//! stop every search of an index that is otherwise perfectly readable. This
//! wrapper serves the files as they are, takes no lock (the lock only keeps a
//! writer's clean-up from deleting files a reader is opening, and a reader's
//! open files stay readable on the platforms we serve), and refuses every
//! write, so the index is served as it was and reported stale.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// An index folder opened for reading only.
#[derive(Debug, Clone)]
pub(super) struct ReadOnlyFolder {
    inner: MmapDirectory,
}

impl ReadOnlyFolder {
    pub(super) fn open(dir: &Path) -> tantivy::Result<ReadOnlyFolder> {
        Ok(ReadOnlyFolder { inner: MmapDirectory::open(dir)? })
    }
}

fn refused() -> io::Error {
    io::Error::new(io::ErrorKind::ReadOnlyFilesystem, "the index folder cannot be written")
}

impl Directory for ReadOnlyFolder {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError { io_error: Arc::new(refused()), filepath: path.to_owned() })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::IoError { io_error: Arc::new(refused()), filepath: PathBuf::from(path) })
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> io::Result<()> {
        Err(refused())
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        if lock.filepath == tantivy::directory::INDEX_WRITER_LOCK.filepath {
            return Err(LockError::IoError(Arc::new(refused())));
        }
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
