import Glibc

/// A lock that the thread owning some sockets holds at every moment except while it sleeps in
/// `ZMQPoller.poll` (the poller's `gate`). Another thread that takes it (`tryLock`) in that time may
/// use those sockets itself, instead of handing the work to the owner and waking it: libzmq lets a
/// socket pass between threads with a full memory barrier between their uses, which the lock is.
///
/// Whoever used a socket under the gate leaves it as the sleeping poll expects: using it took in
/// the commands its I/O thread had queued, among them "a message came", which then no longer wakes
/// the socket's descriptor. So it asks the socket (`ZMQSocket.hasMessage()`) and wakes the owner
/// when a message is there.
public final class WaitGate: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// Takes the gate if nobody holds it (its owner is asleep in its poll); never waits.
    public func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }
}
