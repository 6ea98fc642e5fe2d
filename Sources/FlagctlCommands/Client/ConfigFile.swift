import Foundation
import SwitchyardCore

/// The settings `flagctl login` saves: `{"server": …, "token": …, "namespace": …}` as JSON, mode 0600.
///
/// Its path: `FLAGCTL_CONFIG`, else `$XDG_CONFIG_HOME/flagctl/config.json`, else `~/.config/flagctl/config.json`.
struct ConfigFile: Sendable, Equatable {
    var server: String?
    var token: String?
    var namespace: String?

    /// The config file's path for an environment.
    static func path(environment: [String: String]) -> String {
        if let path = environment["FLAGCTL_CONFIG"], !path.isEmpty { return path }
        if let base = environment["XDG_CONFIG_HOME"], !base.isEmpty { return base + "/flagctl/config.json" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.config/flagctl/config.json"
    }

    /// Reads the file; nil when there is none. Warns when other users may read it.
    ///
    /// - Throws: `CommandFailure` when it exists but cannot be read or is not a config file.
    static func read(path: String, console: Console) throws(CommandFailure) -> ConfigFile? {
        guard let data = FileManager.default.contents(atPath: path) else {
            if FileManager.default.fileExists(atPath: path) {
                throw CommandFailure(
                    "cannot read the config file \(path); check its permissions, or run 'flagctl login' again")
            }
            return nil
        }
        if let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 != 0
        {
            console.writeError("warning: \(path) holds a token and other users may read it; run 'chmod 600 \(path)'\n")
        }
        guard let tree = try? JSONValue.parse(Array(data)), case .object(let object) = tree else {
            throw CommandFailure(
                "the config file \(path) is not a JSON object; delete it and run 'flagctl login' again")
        }
        return ConfigFile(
            server: object["server"]?.stringValue, token: object["token"]?.stringValue,
            namespace: object["namespace"]?.stringValue)
    }

    /// Writes the file with mode 0600 (its folder 0700), replacing it in one step, so the token is never readable
    /// by others, not even for a moment.
    ///
    /// - Throws: `CommandFailure` naming the path when it cannot be written.
    func write(path: String) throws(CommandFailure) {
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) {
            do {
                try FileManager.default.createDirectory(
                    atPath: folder, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw CommandFailure(
                    "cannot create the folder \(folder) for the config file: \(error.localizedDescription); set FLAGCTL_CONFIG to a writable path"
                )
            }
        }
        var object = JSONObject()
        if let server { object["server"] = .string(server) }
        if let namespace { object["namespace"] = .string(namespace) }
        if let token { object["token"] = .string(token) }
        let bytes = JSONValue.object(object).serialized(.pretty) + [UInt8(ascii: "\n")]
        let temporary = path + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else {
            throw CommandFailure(
                "cannot write the config file \(path) (\(String(cString: strerror(errno)))); set FLAGCTL_CONFIG to a writable path"
            )
        }
        fchmod(descriptor, 0o600)
        let written = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CommandFailure(
                "cannot write the config file \(path) (\(String(cString: strerror(errno)))); set FLAGCTL_CONFIG to a writable path"
            )
        }
    }
}
