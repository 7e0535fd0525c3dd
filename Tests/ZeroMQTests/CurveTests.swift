import Testing
@testable import ZeroMQ

@Suite struct CurveTests {
    @Test func keyPairsRoundTripThroughZ85() throws {
        let pair = try CurveKeyPair.generate()
        #expect(pair.publicKey.z85.count == 40)
        #expect(try CurveKey(z85: pair.publicKey.z85) == pair.publicKey)
        #expect(try CurveKey(z85: " \(pair.secretKey.z85)\n") == pair.secretKey)
        #expect(try CurveKeyPair(secretKey: pair.secretKey).publicKey == pair.publicKey)
    }

    @Test func malformedKeysAreRefusedWithAnExplanation() {
        #expect(throws: CurveKeyError.notZ85("short")) { try CurveKey(z85: "short") }
        #expect(throws: CurveKeyError.wrongLength(3)) { try CurveKey(bytes: [1, 2, 3]) }
        #expect(CurveKeyError.notZ85("x").description.contains("flowbus keys"))
    }

    @Test func allowListAdmitsKnownClientsAndRefusesOthers() throws {
        #expect(ZeroMQLibrary.has("curve"))
        let context = try ZMQContext()
        let server = try CurveKeyPair.generate()
        let friend = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let authenticator = ZAPAuthenticator(context: context, allowedClientKeys: [friend.publicKey])
        try authenticator.start()
        defer { authenticator.stop() }

        let endpoint = ipcEndpoint()
        let rep = try ZMQSocket(context: context, type: .rep)
        try rep.makeCurveServer(secretKey: server.secretKey)
        try rep.setZAPDomain("flowbus")
        try rep.bind(endpoint)
        try rep.setReceiveTimeout(.seconds(5))

        let good = try ZMQSocket(context: context, type: .req)
        try good.makeCurveClient(serverKey: server.publicKey, keyPair: friend)
        try good.connect(endpoint)
        try good.send([Array("hi".utf8)])
        #expect(try rep.receiveMessage() == [Array("hi".utf8)])
        try rep.send([Array("ok".utf8)])
        try good.setReceiveTimeout(.seconds(5))
        #expect(try good.receiveMessage() == [Array("ok".utf8)])

        let bad = try ZMQSocket(context: context, type: .req, linger: .zero)
        try bad.makeCurveClient(serverKey: server.publicKey, keyPair: stranger)
        try bad.connect(endpoint)
        try bad.send([Array("let me in".utf8)])
        try rep.setReceiveTimeout(.milliseconds(300))
        #expect(try rep.receiveMessage() == nil)
        #expect(authenticator.decisions.admitted >= 1)
        #expect(authenticator.decisions.denied >= 1)
    }
}
