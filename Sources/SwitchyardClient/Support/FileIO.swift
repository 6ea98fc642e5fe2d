package import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Small POSIX file helpers: bounded reads and atomic replacement (write a temporary file, sync, rename).
package enum FileIO {
    /// Reads a whole file, refusing files larger than `limit` bytes.
    ///
    /// - Returns: the bytes, or nil when the file does not exist.
    /// - Throws: `ClientError` when the file exists but cannot be read or is too large.
    package static func read(_ url: URL, limit: Int) throws(ClientError) -> [UInt8]? {
        let path = url.path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw ClientError(.fileSystem, "cannot open \(path): \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw ClientError(.fileSystem, "cannot stat \(path): \(String(cString: strerror(errno)))")
        }
        let size = Int(info.st_size)
        guard size <= limit else {
            throw ClientError(.tooLarge, "\(path) is \(size) bytes; the limit is \(limit)")
        }
        var bytes = [UInt8](repeating: 0, count: size)
        var offset = 0
        while offset < size {
            let count = bytes.withUnsafeMutableBytes { buffer in
                posixRead(fd, buffer.baseAddress! + offset, size - offset)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw ClientError(.fileSystem, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            offset += count
        }
        if offset < size { bytes.removeSubrange(offset...) }
        return bytes
    }

    /// Replaces a file atomically: readers see the old content or the new one, never a mix.
    ///
    /// Writes a temporary file next to the target, syncs it to disk when `sync` is true (survives power loss,
    /// not only an app crash), renames it over the target and syncs the directory.
    /// - Throws: `ClientError` saying which step failed.
    package static func writeAtomically(_ bytes: [UInt8], to url: URL, sync: Bool = true) throws(ClientError) {
        let directory = url.deletingLastPathComponent().path
        let temporary = directory + "/." + url.lastPathComponent + ".tmp-" + UUID().uuidString
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ClientError(.fileSystem, "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        var closed = false
        defer {
            if !closed { close(fd) }
        }
        do {
            try writeAll(bytes, to: fd, path: temporary)
        } catch {
            unlink(temporary)
            throw error
        }
        if sync && fsync(fd) != 0 {
            let message = String(cString: strerror(errno))
            unlink(temporary)
            throw ClientError(.fileSystem, "cannot sync \(temporary): \(message)")
        }
        close(fd)
        closed = true
        guard rename(temporary, url.path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temporary)
            throw ClientError(.fileSystem, "cannot rename \(temporary) to \(url.path): \(message)")
        }
        if sync {
            let directoryFD = open(directory, O_RDONLY | O_CLOEXEC)
            if directoryFD >= 0 {
                _ = fsync(directoryFD)
                close(directoryFD)
            }
        }
    }

    /// Appends bytes to a file (created when missing), synced to disk when `sync` is true.
    ///
    /// A crash can leave the end of what was appended missing: readers must check what they read (a length and a
    /// checksum per record).
    /// - Throws: `ClientError` saying which step failed.
    package static func append(_ bytes: [UInt8], to url: URL, sync: Bool = true) throws(ClientError) {
        let path = url.path
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ClientError(.fileSystem, "cannot open \(path) to append: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        try writeAll(bytes, to: fd, path: path)
        if sync && fsync(fd) != 0 {
            throw ClientError(.fileSystem, "cannot sync \(path): \(String(cString: strerror(errno)))")
        }
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32, path: String) throws(ClientError) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                posixWrite(fd, buffer.baseAddress! + offset, bytes.count - offset)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw ClientError(.fileSystem, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
            offset += count
        }
    }

    /// Creates a directory and its parents when missing.
    package static func createDirectory(_ url: URL) throws(ClientError) {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw ClientError(.fileSystem, "cannot create the directory \(url.path): \(error.localizedDescription)")
        }
    }

    /// Removes a file; a missing file is not an error.
    package static func remove(_ url: URL) {
        unlink(url.path)
    }

    /// The names of the files in a directory; empty when it cannot be read.
    package static func fileNames(in directory: URL) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    }

    /// Takes an exclusive advisory lock (`flock`) on a file, created when missing, without waiting.
    ///
    /// The lock belongs to the open file: another process, or another open of the same file in this one, cannot take
    /// it until the lock is released or its holder exits (however it exits: the kernel drops the locks of a process
    /// that died).
    /// - Returns: the lock, or nil when someone else holds it.
    /// - Throws: `ClientError` when the file cannot be opened or locked for another reason.
    package static func tryLock(_ url: URL) throws(ClientError) -> FileLock? {
        let path = url.path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ClientError(.fileSystem, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { return nil }
            throw ClientError(.fileSystem, "cannot lock \(path): \(String(cString: strerror(code)))")
        }
        return FileLock(descriptor: fd)
    }
}

/// An exclusive lock on an open file (``FileIO/tryLock(_:)``), released when the last reference goes.
package final class FileLock: Sendable {
    private let descriptor: Int32

    fileprivate init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}

// `read` and `write` are shadowed by members in some contexts; name the C functions explicitly.
@inline(__always)
private func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
        return Darwin.read(fd, buffer, count)
    #elseif canImport(Glibc)
        return Glibc.read(fd, buffer, count)
    #else
        return Musl.read(fd, buffer, count)
    #endif
}

@inline(__always)
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
        return Darwin.write(fd, buffer, count)
    #elseif canImport(Glibc)
        return Glibc.write(fd, buffer, count)
    #else
        return Musl.write(fd, buffer, count)
    #endif
}
