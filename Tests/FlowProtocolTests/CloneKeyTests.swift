import FlowProtocol
import Testing

@Suite("Clone key grammar")
struct CloneKeyTests {
    @Test(arguments: [
        ("/s/abc/nav", CloneKey.navigation(try! SessionID("abc"))),
        ("/s/abc/meta", .sessionMeta(try! SessionID("abc"))),
        ("/s/A-1_b.c/vm/signin", .viewModel(try! SessionID("A-1_b.c"), try! ScreenName("signin"))),
        ("/v/signin/abc", .screenMirror(try! ScreenName("signin"), try! SessionID("abc"))),
        ("/c/auth/abc", .coordinatorInstance(try! CoordinatorName("auth"), try! SessionID("abc"))),
        ("/host/plugins/echo", .host(try! HostPath(["plugins", "echo"]))),
        ("/host/started", .host(try! HostPath(["started"]))),
        ("/schema/shop.v1", .appSchema(package: "shop.v1")),
    ])
    func parsesAndFormatsValidKeys(text: String, expected: CloneKey) throws {
        let key = try CloneKey(parsing: text)
        #expect(key == expected)
        #expect(key.text == text)
        #expect(key.bytes == Array(text.utf8))
    }

    @Test(arguments: [
        "",                      // empty
        "s/abc/nav",             // no leading slash
        "/s/abc/nav/",           // trailing slash: only subtrees end in '/'
        "/s//nav",               // empty segment
        "/s/ab c/nav",           // space
        "/s/abç/nav",            // not ASCII
        "/s/abc/vm/SignIn",      // screen names are lowercase
        "/s/../nav",             // dot-only segment
        "/schema/shop.v1/x",     // a schema key names one package
        "/s/abc",                // no leaf
        "/s/abc/vm",             // no screen
        "/s/abc/other",          // unknown leaf
        "/v/signin",             // no session
        "/c/auth",               // coordinator without a session
        "/c/Auth/abc",           // coordinator names are lowercase
        "/x/abc",                // unknown tree
        "/host",                 // host without a path
        "/s/abc/nav\n",          // control character
    ])
    func rejectsInvalidKeys(text: String) {
        #expect(throws: NameError.self) { try CloneKey(parsing: text) }
    }

    /// A refused key names the character that is not allowed, whole, as a person sees it.
    @Test(arguments: [
        ("/s/abç/nav", "ç"), ("/s/a\u{301}b/nav", "a\u{301}"), ("/s/ab c/nav", " "), ("/v/sign👍in/x", "👍"), ("/s/x/vm/sign\tin", "\t"),
    ] as [(String, Character)])
    func namesTheCharacterRefused(key: String, character: Character) throws {
        #expect(throws: NameError.invalidCharacter(
            what: "clone key", text: key, character: character, allowed: "ASCII letters, digits, '.', '_' and '-' between '/'")) {
            try CloneKeyGrammar.validate(key)
        }
    }

    @Test func rejectsKeysOverTheLimit() throws {
        let long = "/host/" + String(repeating: "a", count: 250)
        #expect(long.utf8.count == 256)
        #expect(throws: NameError.tooLong(what: "clone key", text: long, bytes: 256, limit: 255)) {
            try CloneKey(parsing: long)
        }
        let fits = "/host/" + String(repeating: "a", count: 249)
        #expect(try CloneKey(parsing: fits).text == fits)
    }

    @Test func longestSessionAndScreenStillFit() throws {
        let key = CloneKey.viewModel(
            try SessionID(String(repeating: "s", count: SessionID.maximumBytes)),
            try ScreenName(String(repeating: "v", count: ScreenName.maximumBytes))
        )
        #expect(key.text.utf8.count <= CloneKeyGrammar.maximumBytes)
        #expect(try CloneKey(parsing: key.text) == key)
    }

    @Test func sessionSubtreeDoesNotMatchALongerSessionID() throws {
        let abc = try SessionID("abc")
        let abcd = try SessionID("abcd")
        let subtree = sessionSubtree(abc)
        #expect(subtree.text == "/s/abc/")
        #expect(subtree.contains(CloneKey.navigation(abc)))
        #expect(subtree.contains(CloneKey.viewModel(abc, try ScreenName("signin"))))
        #expect(!subtree.contains(CloneKey.navigation(abcd)))
        #expect(!subtree.contains(CloneKey.sessionMeta(abcd)))
        #expect(!subtree.contains(CloneKey.screenMirror(try ScreenName("signin"), abc)))
    }

    @Test func screenSubtreeFollowsOneScreenAcrossSessions() throws {
        let signin = try ScreenName("signin")
        let subtree = screenSubtree(signin)
        #expect(subtree.text == "/v/signin/")
        #expect(subtree.contains(CloneKey.screenMirror(signin, try SessionID("a"))))
        #expect(subtree.contains(CloneKey.screenMirror(signin, try SessionID("b"))))
        #expect(!subtree.contains(CloneKey.screenMirror(try ScreenName("signin2"), try SessionID("a"))))
        #expect(!subtree.contains(CloneKey.viewModel(try SessionID("a"), signin)))
    }

    @Test func viewModelStateIsPublishedUnderBothTrees() throws {
        let session = try SessionID("abc")
        let screen = try ScreenName("signin")
        let keys = CloneKey.viewModelKeys(session: session, screen: screen)
        #expect(keys.map(\.text) == ["/v/signin/abc", "/s/abc/vm/signin"])
        #expect(keys.map(\.isInSessionTree) == [false, true])
        #expect(keys.allSatisfy { $0.session == session && $0.screen == screen })
    }

    @Test(arguments: ["", String(repeating: "x", count: 129), "a/b", "a b", ".", ".."])
    func rejectsInvalidSessionIDs(text: String) {
        #expect(throws: NameError.self) { try SessionID(text) }
    }

    @Test func errorsSayWhatToDo() {
        do {
            _ = try CloneKey(parsing: "/s/abc/nav/")
            Issue.record("a trailing slash was accepted")
        } catch {
            #expect(error.description.contains("/s/abc/nav/"))
            #expect(error.description.contains("remove"))
        }
    }
}

@Suite("Clone subtrees")
struct CloneSubtreeTests {
    @Test func eachSubtreeHoldsItsKeysAndNoOthers() throws {
        let session = try SessionID("abc")
        let other = try SessionID("abcd")
        let screen = try ScreenName("cart")
        #expect(CloneSubtree.viewModels(of: session).contains(CloneKey.viewModel(session, screen)))
        #expect(!CloneSubtree.viewModels(of: session).contains(CloneKey.viewModel(other, screen)))
        #expect(!CloneSubtree.viewModels(of: session).contains(CloneKey.navigation(session)))
        let coordinator = try CoordinatorName("shop")
        #expect(CloneSubtree.coordinator(coordinator).contains(CloneKey.coordinatorInstance(coordinator, session)))
        #expect(!CloneSubtree.coordinator(try CoordinatorName("shopping")).contains(CloneKey.coordinatorInstance(coordinator, session)))
        #expect(CloneSubtree.allCoordinators.contains(CloneKey.coordinatorInstance(coordinator, session)))
        #expect(CloneSubtree.schemas.contains(CloneKey.appSchema(package: "shop.v1")))
        #expect(!CloneSubtree.allSessions.contains(CloneKey.appSchema(package: "shop.v1")))
    }
}
