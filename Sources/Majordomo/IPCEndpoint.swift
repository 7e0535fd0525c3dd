import Glibc

/// libzmq binds an ipc:// path by unlinking whatever is there, even a socket another
/// broker still listens on; asking the path first turns that into "address in use".
enum IPCEndpoint {
    static func hasListener(_ endpoint: String) -> Bool {
        guard endpoint.hasPrefix("ipc://") else { return false }
        let path = String(endpoint.dropFirst("ipc://".count))
        guard path != "*", !path.hasPrefix("@") else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let bytes = Array(path.utf8)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }
}
