"""The Django test cases run inside the project that tests/integrations/test_django.py builds from
docs/django.md (as ``blog/tests.py``): Django's own test client against real tidings."""

import jwt
from django.contrib.auth import get_user_model
from django.db import transaction
from django.template import Context, Template
from django.test import RequestFactory, TransactionTestCase

from tidings.contrib.django import get_tidings

from .models import Comment, Post


class Notifications(TransactionTestCase):
    def setUp(self):
        users = get_user_model()
        self.ann = users.objects.create_user("ann", password="pw")
        self.bob = users.objects.create_user("bob", password="pw")
        self.post = Post.objects.create(author=self.ann, title="Hello")
        self.tidings = get_tidings()
        self.tidings.run_jobs()

    def tearDown(self):
        # Django empties its tables between these tests; tidings' database is another one
        self.tidings.retract(type="comment-posted")

    def inbox(self, user):
        self.tidings.run_jobs()
        return self.tidings.notifications(user.username).items

    def test_a_comment_notifies_the_posts_author_after_commit(self):
        with transaction.atomic():
            Comment.objects.create(post=self.post, author=self.bob, text="hi")
            self.assertEqual(self.tidings.queue.stats().get("queued", 0), 0)
        items = self.inbox(self.ann)
        self.assertEqual([i.title for i in items], ["bob commented on Hello"])
        self.assertEqual(self.inbox(self.bob), [])

    def test_a_rolled_back_save_publishes_nothing(self):
        try:
            with transaction.atomic():
                Comment.objects.create(post=self.post, author=self.bob, text="hi")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        self.assertEqual(self.inbox(self.ann), [])

    def test_two_comments_bundle_and_deleting_one_retracts_it(self):
        carl = get_user_model().objects.create_user("carl", password="pw")
        first = Comment.objects.create(post=self.post, author=self.bob, text="one")
        Comment.objects.create(post=self.post, author=carl, text="two")
        items = self.inbox(self.ann)
        self.assertEqual(len(items), 1)
        self.assertEqual(items[0].title, "carl and 1 other commented on Hello")
        first.delete()
        self.assertEqual([i.title for i in self.inbox(self.ann)], ["carl commented on Hello"])

    def test_the_token_view_mints_a_token_for_the_signed_in_user_only(self):
        answer = self.client.get("/tidings/token")
        self.assertEqual(answer.status_code, 302)  # to the login page
        self.client.force_login(self.bob)
        answer = self.client.get("/tidings/token")
        self.assertEqual(answer.status_code, 200)
        body = answer.json()
        self.assertEqual(body["user"], "bob")
        claims = jwt.decode(body["token"], "change-me-to-a-long-random-secret",
                            algorithms=["HS256"])
        self.assertEqual(claims["sub"], "bob")
        self.assertEqual(claims["exp"], body["expires_at"])

    def test_the_bell_tag_renders_for_a_signed_in_user_and_not_for_a_visitor(self):
        page = Template("{% load tidings_tags %}{% tidings_bell %}")
        request = RequestFactory().get("/")
        request.user = self.bob
        html = page.render(Context({"request": request}))
        self.assertIn('<tidings-bell api="http://127.0.0.1:8001" token="', html)
        self.assertIn('src="http://127.0.0.1:8001/tidings-bell.js"', html)
        from django.contrib.auth.models import AnonymousUser
        request.user = AnonymousUser()
        self.assertEqual(page.render(Context({"request": request})).strip(), "")

    def test_deleting_a_user_removes_their_tidings_data(self):
        Comment.objects.create(post=self.post, author=self.bob, text="hi")
        ann = "ann"
        self.tidings.subscribe(ann, "*", "post:9")
        self.tidings.follow(ann, "bob")
        self.tidings.follow("bob", ann)
        self.tidings.mute(ann, actor="someone")
        self.tidings.store.transact(lambda tx: tx.push.add_push_subscription(
            ann, "https://push.example.org/ann", "h-ann", "p256dh", "auth",
            self.tidings.clock.now_us()))
        self.assertEqual(len(self.tidings.push.list(ann)), 1)
        self.assertEqual(len(self.inbox(self.ann)), 1)
        self.ann.delete()
        self.assertEqual(self.inbox(self.ann), [])
        self.assertEqual(self.tidings.subscriptions(ann).items, [])
        self.assertEqual(self.tidings.following(ann).items, [])
        self.assertEqual(self.tidings.followers(ann).items, [])
        self.assertEqual(self.tidings.muted(ann), {"actors": [], "objects": []})
        self.assertEqual(self.tidings.push.list(ann), [])


class Admin(TransactionTestCase):
    def setUp(self):
        users = get_user_model()
        self.admin = users.objects.create_superuser("root", password="pw")
        self.ann = users.objects.create_user("ann", password="pw")
        self.bob = users.objects.create_user("bob", password="pw")
        self.tidings = get_tidings()

    def tearDown(self):
        self.tidings.retract(type="comment-posted")

    def test_the_admin_lists_types_shows_an_inbox_and_retries_a_failed_job(self):
        post = Post.objects.create(author=self.ann, title="Hello")
        Comment.objects.create(post=post, author=self.bob, text="hi")
        self.tidings.run_jobs()
        from tidings.jobs.model import JobSpec
        self.tidings.store.transact(
            lambda tx: tx.jobs.enqueue_many([JobSpec("webhook", {"url": "https://x.test"})]))
        (job,) = self.tidings.queue.claim(1, funcs=["webhook"])
        self.tidings.store.transact(lambda tx: tx.jobs.record_failure(
            job, "answered 500", final=True, now=self.tidings.clock.now_us()))
        self.tidings.store.transact(lambda tx: tx.jobs.complete(job))

        self.client.force_login(self.admin)
        index = self.client.get("/admin/").content.decode()
        for entry in ("Event types", "User inboxes", "Failed jobs"):
            self.assertIn(entry, index)
        types = self.client.get("/admin/tidings/eventtype/").content.decode()
        self.assertIn("<td>comment-posted</td>", types)
        inbox = self.client.get("/admin/tidings/inbox/", {"user": "ann"}).content.decode()
        self.assertIn("bob commented on Hello", inbox)
        self.assertIn("ann: 1 unread", inbox)
        failed = self.client.get("/admin/tidings/failedjob/").content.decode()
        self.assertIn("answered 500", failed)
        answer = self.client.post("/admin/tidings/failedjob/", {"job": str(job.id)})
        self.assertEqual(answer.status_code, 302)
        self.assertEqual(self.tidings.queue.counts_by_func().get("webhook"), 1)
        self.assertEqual(self.tidings.queue.failures(final_only=True), [])
        (again,) = self.tidings.queue.claim(1, funcs=["webhook"])
        self.tidings.store.transact(lambda tx: tx.jobs.complete(again))

    def test_the_admin_pages_need_staff(self):
        self.client.force_login(self.bob)
        for page in ("eventtype", "inbox", "failedjob"):
            answer = self.client.get(f"/admin/tidings/{page}/")
            self.assertEqual(answer.status_code, 302)  # to the admin's login
