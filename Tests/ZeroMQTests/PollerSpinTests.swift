import Testing
import ZeroMQ

@Suite("Poller spin")
struct PollerSpinTests {
    /// A PULL bound on a fresh inproc endpoint, a PUSH connected to it, and a poller watching the
    /// PULL (the context is returned with them, to live as long as the test).
    func pushToAPolledPull(_ name: String) throws -> (context: ZMQContext, pull: ZMQSocket, push: ZMQSocket, poller: ZMQPoller, index: Int) {
        let context = try ZMQContext()
        let endpoint = "inproc://\(name)-\(UInt32.random(in: 0...UInt32.max))"
        let pull = try ZMQSocket(context: context, type: .pull, linger: .zero)
        try pull.bind(endpoint)
        let push = try ZMQSocket(context: context, type: .push, linger: .zero)
        try push.connect(endpoint)
        let poller = ZMQPoller()
        let index = poller.add(pull)
        return (context, pull, push, poller, index)
    }

    @Test func spinSeesAMessageThatIsAlreadyThereAndTimesOutWithoutOne() throws {
        let (context, pull, push, poller, index) = try pushToAPolledPull("spin")
        defer { withExtendedLifetime(context) {} }
        #expect(try poller.spin(upTo: .microseconds(200)) == false)
        try push.send([[1, 2, 3]])
        #expect(try poller.spin(upTo: .seconds(2)) == true)
        #expect(poller.isReadable(index))
        #expect(try pull.receiveMessage(dontWait: true) == [[1, 2, 3]])
    }

    @Test func aSubMillisecondTimeoutStillWaits() throws {
        let context = try ZMQContext()
        let pull = try ZMQSocket(context: context, type: .pull, linger: .zero)
        try pull.bind("inproc://subms-\(UInt32.random(in: 0...UInt32.max))")
        let poller = ZMQPoller()
        poller.add(pull)
        // zmq_poll counts whole milliseconds; 300 µs must not become a zero (non-blocking) poll.
        // A signal may cut one wait short (EINTR returns 0 early): one of three must last.
        let clock = ContinuousClock()
        var waited: [Duration] = []
        for _ in 0..<3 {
            let start = clock.now
            #expect(try poller.poll(timeout: .microseconds(300)) == 0)
            waited.append(clock.now - start)
        }
        #expect(waited.contains { $0 >= .microseconds(300) }, "every 300 µs poll returned early: \(waited)")
    }

    /// A loop that keeps its deadlines in nanoseconds (a Clone agent or server) waits as one
    /// that passes a `Duration`: zero does not wait, a part of a millisecond is rounded up, a
    /// waiting message ends the wait, and no timeout is too long to pass in either form.
    @Test func aTimeoutInNanosecondsWaitsAsADurationDoes() throws {
        let (context, pull, push, poller, index) = try pushToAPolledPull("ns")
        defer { withExtendedLifetime(context) {} }
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try poller.poll(timeoutNanoseconds: 0) == 0)
        #expect(clock.now - start < .milliseconds(500))
        // A signal may cut one wait short (EINTR returns 0 early): one of three must last.
        var waited: [Duration] = []
        for timeout: UInt64 in [300_000, 300_000, 300_000, 20_000_000, 20_000_000, 20_000_000] {
            let start = clock.now
            #expect(try poller.poll(timeoutNanoseconds: timeout) == 0)
            waited.append(clock.now - start)
        }
        #expect(waited[0..<3].contains { $0 >= .microseconds(300) }, "every 300 µs poll returned early: \(waited)")
        #expect(waited[3..<6].contains { $0 >= .milliseconds(20) }, "every 20 ms poll returned early: \(waited)")
        // The longest timeouts, with a message already seen waiting (so that a fault here fails
        // the test instead of waiting for weeks).
        try push.send([[1]])
        #expect(try poller.poll(timeout: .seconds(5)) == 1)
        #expect(try poller.poll(timeoutNanoseconds: .max) == 1)
        #expect(poller.isReadable(index))
        #expect(try poller.poll(timeout: .seconds(Int64.max / 2)) == 1)
        #expect(try pull.receiveMessage(dontWait: true) == [[1]])
        #expect(try poller.poll(timeout: .milliseconds(-5)) == 0)
    }
}
