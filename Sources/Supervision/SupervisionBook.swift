/// Everything the supervision loop and the public API share, kept behind one mutex.
struct SupervisionBook {
    enum Phase {
        case idle, running, stopping, stopped
    }

    enum Command {
        case start(PendingReply<SupervisorError?>)
        case stop(PendingReply<Void>)
    }

    var phase = Phase.idle
    var threadLaunched = false
    /// Set when the loop's thread has taken its last commands; later ones would never be answered.
    var loopExited = false
    /// In start order: manifest order, replicas in index order.
    var instances: [Instance]
    var commands: [Command] = []

    init(instances: [Instance]) {
        self.instances = instances
    }

    func index(of id: InstanceID) -> Int? {
        instances.firstIndex { $0.id == id }
    }
}
