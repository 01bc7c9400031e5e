-- 0002: leadership — lease rows with fencing tokens, for daemons, singletons and leader-only work.
-- Runs with search_path set to the target schema only (see 0001).

-- Fencing tokens of leader terms. Every acquisition draws the next value, so a later term of a
-- name always holds a larger token than any earlier one, and no token is ever handed out twice.
-- Failed acquisition attempts also draw (and discard) a value: gaps are harmless, reuse would not be.
CREATE SEQUENCE leader_token_seq AS bigint;

-- One row per name: who holds it, under which token, until when (database clock). The row is kept
-- after the holder releases or dies (expires_at in the past) so operators see the last holder.
CREATE TABLE leases (
  name        text        PRIMARY KEY,
  holder      text        NOT NULL,
  token       bigint      NOT NULL,
  expires_at  timestamptz NOT NULL,
  acquired_at timestamptz NOT NULL,
  renewed_at  timestamptz NOT NULL,
  CONSTRAINT leases_name_valid CHECK (length(name) BETWEEN 1 AND 200),
  CONSTRAINT leases_holder_valid CHECK (length(holder) BETWEEN 1 AND 200)
);

-- Whether `lease_token` is the current, unexpired token of lease `lease_name`. Locks the lease row
-- FOR SHARE, so within the caller's transaction no takeover (or renewal) can commit until the
-- caller commits or rolls back. Expiry is judged by clock_timestamp(), not now(): the caller's
-- transaction may have started long before this check.
CREATE FUNCTION lease_check(lease_name text, lease_token bigint) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  ok boolean;
BEGIN
  SELECT l.token = lease_check.lease_token AND l.expires_at > clock_timestamp() INTO ok
  FROM leases l WHERE l.name = lease_check.lease_name
  FOR SHARE;
  RETURN coalesce(ok, false);
END
$$;

-- Fences the caller's transaction: raises SQLSTATE NS005 (message starting NS_FENCED:) unless
-- `lease_token` is the current, unexpired token of `lease_name`, and otherwise holds the lease row
-- FOR SHARE until the transaction ends, so the transaction commits only if no other process took
-- the lease in between. A deposed leader's write inside such a transaction is refused.
--
-- While the row is share-locked nobody can take the lease over, so a frozen holder (SIGSTOP, a
-- long GC pause) must not keep it locked forever: unless the session already has its own
-- idle_in_transaction_session_timeout, this sets one for the rest of the transaction equal to the
-- time the lease has left. A transaction left idle past its lease is then ended by the server and
-- its writes rolled back — which is what fencing asks for anyway.
CREATE FUNCTION assert_lease(lease_name text, lease_token bigint) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  l leases%ROWTYPE;
  left_ms bigint;
BEGIN
  IF lease_name IS NULL OR lease_token IS NULL THEN
    RAISE EXCEPTION 'NS_FENCED: lease "%" token % refused: name and token are required', lease_name, lease_token
      USING ERRCODE = 'NS005', HINT = 'pass the lease name and the fencing token of the current term';
  END IF;
  SELECT * INTO l FROM leases WHERE name = assert_lease.lease_name FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'NS_FENCED: lease "%" token % refused: no such lease', lease_name, lease_token
      USING ERRCODE = 'NS005', HINT = 'the lease has never been acquired; check the name';
  END IF;
  IF l.token <> assert_lease.lease_token THEN
    RAISE EXCEPTION 'NS_FENCED: lease "%" token % refused: the lease passed to token % (holder %)',
      lease_name, lease_token, l.token, l.holder
      USING ERRCODE = 'NS005', HINT = 'this process is no longer the leader; stop the work, the new leader does it';
  END IF;
  left_ms := floor(extract(epoch FROM l.expires_at - clock_timestamp()) * 1000);
  IF left_ms <= 0 THEN
    RAISE EXCEPTION 'NS_FENCED: lease "%" token % refused: the lease expired at %', lease_name, lease_token, l.expires_at
      USING ERRCODE = 'NS005', HINT = 'the holder did not renew in time; stop the work, a new leader will be elected';
  END IF;
  IF current_setting('idle_in_transaction_session_timeout') = '0' THEN
    PERFORM set_config('idle_in_transaction_session_timeout', greatest(left_ms, 1)::text, true);
  END IF;
END
$$;
