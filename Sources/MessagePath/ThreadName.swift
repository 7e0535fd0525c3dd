#if canImport(Glibc)
import Glibc
#endif

/// Names the calling thread where the system shows it (`top -H`, `ps -L`, `perf`, a debugger).
/// Foundation keeps a `Thread`'s `name` to itself on Linux, so a Flowbus thread would show the
/// name of whichever thread started it; each loop names itself first thing instead. Linux keeps
/// 15 bytes of a name: the rest is cut. Elsewhere, and where /proc is missing, it does nothing.
public enum ThreadName {
    public static func set(_ name: String) {
        #if os(Linux)
        // The calling thread's own entry (pthread_setname_np and prctl are not visible to Swift here).
        let file = open("/proc/thread-self/comm", O_WRONLY)
        guard file >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        close(file)
        #endif
    }
}
