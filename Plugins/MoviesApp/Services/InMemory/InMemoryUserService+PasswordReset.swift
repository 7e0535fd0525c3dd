import AccountKit
import AppStore
import Foundation
import Synchronization

/// Forgot password: a 6-digit code mailed to the account, then a new password chosen with it.
extension InMemoryUserService {
    public func requestPasswordReset(email: String) throws(ServiceFailure) {
        let email = Self.key(email)
        let now = clock()
        // An unknown address is answered alike, and mailed nothing: the reply reveals no account.
        let issued = try store.withLock { store throws(ServiceFailure) -> ResetCode? in
            try ResetCode.issue(for: email, now: now, accounts: store.accounts, codes: &store.resetCodes) { changes throws(ServiceFailure) in
                try records.commit(try changes())
            }
        }
        guard let issued else { return }
        try mail.send(Mail(
            to: email, subject: "Your Flowbus password reset code",
            body: "Your password reset code is \(issued.code). Type it on the Choose a new password screen with your new password; it is valid for \(ResetCode.validity(resetCodeLifetime)). If you did not ask for it, ignore this mail: your password stays as it is."))
    }

    public func resetPassword(email: String, code: String, newPassword: String) throws(ServiceFailure) {
        let email = Self.key(email)
        guard newPassword.count >= AccountRules.minimumPasswordLength else { throw .refused(.passwordTooShort) }
        // Hashing runs outside the lock: it is the slow part.
        let hash = PasswordHash(password: newPassword, iterations: hashIterations)
        let now = clock()
        let lifetime = resetCodeLifetime
        let keys = [AttemptLimiter.account(email)]
        if attempts.wait(for: keys, now: now) != nil { throw .refused(.tooManyAttempts) }
        let outcome = try store.withLock { store throws(ServiceFailure) -> ResetCode.Outcome in
            try ResetCode.reset(
                email: email, typed: code, hash: hash, now: now, lifetime: lifetime,
                accounts: &store.accounts, sessions: &store.sessions, codes: &store.resetCodes
            ) { changes throws(ServiceFailure) in try records.commit(try changes()) }
        }
        switch outcome {
        case .changed: attempts.recordSuccess(keys)
        case .expired: throw .refused(.expiredToken)
        case .wrong:
            attempts.recordFailure(keys, now: now)
            throw .refused(.wrongToken)
        }
    }
}
