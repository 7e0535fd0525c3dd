import Foundation
import Testing
@testable import ZeroMQ

@Suite struct PollerTests {
    let context = try! ZMQContext()

    /// Two bound PULL sockets, and a PUSH connected to the second only.
    func twoPullsAndAPushToTheSecond() throws -> (first: ZMQSocket, second: ZMQSocket, push: ZMQSocket) {
        let a = ipcEndpoint("a"), b = ipcEndpoint("b")
        let first = try ZMQSocket(context: context, type: .pull)
        try first.bind(a)
        let second = try ZMQSocket(context: context, type: .pull)
        try second.bind(b)
        let push = try ZMQSocket(context: context, type: .push)
        try push.connect(b)
        return (first, second, push)
    }

    @Test func pollReportsOnlyTheReadableSocket() throws {
        let (quiet, busy, push) = try twoPullsAndAPushToTheSecond()
        let poller = ZMQPoller()
        let quietIndex = poller.add(quiet)
        let busyIndex = poller.add(busy)
        #expect(try poller.poll(timeout: .milliseconds(10)) == 0)

        try push.send([Array("x".utf8)])
        #expect(try poller.poll(timeout: .seconds(5)) == 1)
        #expect(poller.isReadable(busyIndex))
        #expect(!poller.isReadable(quietIndex))
        #expect(try busy.hasIncoming())
    }

    @Test func pollWatchesAPlainFileDescriptor() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let poller = ZMQPoller()
        let index = poller.add(fileDescriptor: fds[0])
        #expect(try poller.poll(timeout: .zero) == 0)
        var byte: UInt8 = 1
        #expect(write(fds[1], &byte, 1) == 1)
        #expect(try poller.poll(timeout: .seconds(5)) == 1)
        #expect(poller.isReadable(index))
    }

    /// A send on a socket takes in its pending commands, "a message waits" among them, and that
    /// command no longer wakes the socket's descriptor: the poller must ask the socket itself.
    @Test func aMessageWhoseCommandASendTookInIsStillSeen() throws {
        let endpoint = ipcEndpoint("d")
        let here = try ZMQSocket(context: context, type: .dealer)
        try here.bind(endpoint)
        let there = try ZMQSocket(context: context, type: .dealer)
        try there.connect(endpoint)
        try there.send([Array("hello".utf8)])
        let poller = ZMQPoller()
        let index = poller.add(here)
        #expect(try poller.poll(timeout: .seconds(5)) == 1)
        #expect(try here.receiveMessage(dontWait: true) == [Array("hello".utf8)])
        #expect(try here.receiveMessage(dontWait: true) == nil)
        #expect(here.drained)

        try there.send([Array("again".utf8)])
        // Long enough for the command to be queued, and for libzmq's throttle (about a
        // millisecond between command checks on send) to let the next send take it in.
        Thread.sleep(forTimeInterval: 0.1)
        try here.send([Array("reply".utf8)])
        let started = ContinuousClock.now
        #expect(try poller.poll(timeout: .seconds(3)) == 1)
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(poller.isReadable(index))
        #expect(try here.receiveMessage(dontWait: true) == [Array("again".utf8)])
    }

    /// A socket last found with nothing to read is not asked again before the wait, and after a
    /// wake-up only the socket whose descriptor woke it is.
    @Test func aDrainedSocketIsLeftToItsDescriptor() throws {
        let (first, second, push) = try twoPullsAndAPushToTheSecond()
        let poller = ZMQPoller()
        poller.add(first)
        let secondIndex = poller.add(second)
        #expect(try poller.poll(timeout: .milliseconds(10)) == 0)
        #expect(poller.readinessChecks >= 2, "both are asked once before the first wait")
        #expect(first.drained && second.drained)

        // The push's connection wakes the second socket's descriptor (a command without a
        // message) once or twice; after that, a wait asks neither socket.
        var quietWaits = 0
        for _ in 0..<40 where quietWaits < 2 {
            let before = poller.readinessChecks
            #expect(try poller.poll(timeout: .milliseconds(50)) == 0)
            quietWaits = poller.readinessChecks == before ? quietWaits + 1 : 0
        }
        #expect(quietWaits == 2, "nothing was done on either socket, yet every wait asked them")

        let beforeMessage = poller.readinessChecks
        try push.send([Array("x".utf8)])
        #expect(try poller.poll(timeout: .seconds(5)) == 1)
        #expect(poller.isReadable(secondIndex))
        // Asking both sockets before and after the wait, as zmq_poll does, would make it 4.
        #expect(poller.readinessChecks - beforeMessage <= 2, "only the socket whose descriptor woke is asked (twice, if a late command of its connection woke it first)")
        #expect(try second.receiveMessage(dontWait: true) == [Array("x".utf8)])
        #expect(try second.receiveMessage(dontWait: true) == nil)
        #expect(second.drained)
    }

    /// Commands that bring no message (a peer connecting) wake the descriptor; the poll goes on
    /// waiting for the rest of its timeout instead of returning early.
    @Test func aWakeUpWithoutAMessageWaitsOutTheTimeout() throws {
        let endpoint = ipcEndpoint("w")
        let pull = try ZMQSocket(context: context, type: .pull)
        try pull.bind(endpoint)
        let poller = ZMQPoller()
        poller.add(pull)
        #expect(try poller.poll(timeout: .zero) == 0)
        let context = self.context
        let connector = Thread {
            Thread.sleep(forTimeInterval: 0.05)
            let push = try? ZMQSocket(context: context, type: .push)
            try? push?.connect(endpoint)
            Thread.sleep(forTimeInterval: 0.5)
            _ = push
        }
        connector.start()
        let started = ContinuousClock.now
        #expect(try poller.poll(timeout: .milliseconds(300)) == 0)
        #expect(ContinuousClock.now - started >= .milliseconds(290))
        Thread.sleep(forTimeInterval: 0.4)
    }
}

#if canImport(Glibc)
import Glibc
#endif
